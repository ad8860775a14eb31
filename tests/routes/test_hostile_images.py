"""Hostile images: cuModuleLoadData takes no length, so capguard
must read a caller's image only as far as its headers can be believed and
never fault. Each crafted image ends right before a PROT_NONE page and is
loaded mid-capture over the fake driver. In every mode the program gets
exactly the driver's own answer (the same as without capguard), keeps
running, and capguard says so in one report."""
import os
import struct
import tempfile
import unittest

from routes_common import CUBIN, DATA, run_probe

# Every in-memory load entry point, and the file one (read within the file's
# own size), with the image before an unreadable page.
OPS = ["load", "loadex", "fatbin", "library", "file"]


def crafted():
    cubin = open(CUBIN, "rb").read()
    out = {"header only (64 bytes)": cubin[:64]}
    for name, off, fmt, value in [("e_shoff 0x3fff0000", 40, "<Q", 0x3FFF0000),
                                  ("e_phoff 0x3fff0000", 32, "<Q", 0x3FFF0000),
                                  ("e_phnum 0xffff", 56, "<H", 0xFFFF),
                                  ("e_shnum 0xffff", 60, "<H", 0xFFFF)]:
        b = bytearray(cubin)
        struct.pack_into(fmt, b, off, value)
        if name.startswith("e_phoff") and struct.unpack_from("<H", b, 56)[0] == 0:
            struct.pack_into("<H", b, 56, 1)
        out[name] = bytes(b)
    fat = bytearray(open(os.path.join(DATA, "kernels_multi.fatbin"), "rb").read())
    struct.pack_into("<Q", fat, 8, 0x3FFF0000)
    out["fatbin claiming 1 GiB"] = bytes(fat)
    ptx = open(os.path.join(DATA, "kernels_sm90.ptx"), "rb").read().rstrip(b"\0")
    out["PTX without its NUL"] = ptx
    return out


class HostileImages(unittest.TestCase):
    def test_driver_answer_one_report_no_fault(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in crafted().items():
                path = os.path.join(tmp, "img")
                with open(path, "wb") as f:
                    f.write(data)
                for op, driver in [(op, d) for op in OPS for d in (12020, 13000)]:
                    if op == "file" and name.startswith("PTX"):
                        continue  # a PTX file needs no NUL: it is text of a known size, not malformed
                    args = ["--op", op, "--image", path, "--guard-image"]
                    plain = run_probe(args, driver=driver, preload=False)
                    self.assertEqual(plain.rc, 0, f"{name}: the fake driver itself: {plain.stderr}")
                    want = plain.int("op_result")
                    # 12.2 refuses any load mid-capture; 13.0 judges the image
                    # (a file's bytes sit in the fake's own buffer, whose end
                    # is not a page edge: what it finds past them is its own
                    # business, capguard only has to agree).
                    if op != "file":
                        self.assertEqual(want, 900 if driver < 12030 else 200, name)
                    for mode in ("report", "guard"):
                        with self.subTest(image=name, op=op, driver=driver, mode=mode):
                            r = run_probe(args, driver=driver, env_extra={"CAPGUARD_MODE": mode})
                            self.assertEqual(r.rc, 0, r.stderr)
                            self.assertEqual(r.int("op_result"), want, r.stderr)
                            self.assertEqual(r.int("end_result"), plain.int("end_result"))
                            self.assertEqual(len(r.report_lines()), 1, r.stderr)
                            self.assertEqual(len(r.events), 1)
                            e = r.events[0]
                            self.assertEqual(e["result"], want)
                            self.assertEqual(e["driver_result"], want)
                            self.assertEqual(e["image"]["kind"], "unknown")
                            # read from the file, the image is cut short by its size
                            self.assertIn("truncated" if op == "file" else "not readable",
                                          e["image"]["why_unknown"])
                            # nothing recorded for a malformed image
                            self.assertEqual(r.of_type("summary")[0].get("recorded", 0), 0)

    def test_emulation_and_rescue_leave_a_malformed_image_to_the_driver(self):
        data = crafted()["e_shoff 0x3fff0000"]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "img")
            with open(path, "wb") as f:
                f.write(data)
            args = ["--op", "load", "--image", path, "--guard-image"]
            for extra in ({"CAPGUARD_EMULATE_DRIVER": "12020"}, {"CAPGUARD_RESCUE": "1"}):
                with self.subTest(extra=extra):
                    r = run_probe(args, driver=13000, env_extra=dict(extra, CAPGUARD_MODE="guard"))
                    self.assertEqual(r.rc, 0, r.stderr)
                    self.assertEqual(r.int("op_result"), 200)
                    self.assertEqual(r.int("end_result"), 0)
                    self.assertEqual(r.events[0]["verdict"], "failed")

    def test_a_good_image_at_the_page_edge_is_still_inspected(self):
        r = run_probe(["--op", "load", "--image", CUBIN, "--guard-image"], driver=13000)
        self.assertEqual(r.rc, 0, r.stderr)
        self.assertEqual(r.int("op_result"), 0)
        self.assertEqual(r.events[0]["image"]["kind"], "cubin")
        self.assertEqual(r.events[0]["image"]["size"], os.path.getsize(CUBIN))


if __name__ == "__main__":
    unittest.main(verbosity=1)
