"""Priming, proved on the fake driver: the run modes, run 1 fails and
run 2 is served from the priming file, what is (not) replayed, priming files
that must not be used, concurrent recorders, the size cap, deferred unloads,
the emulated older driver and rescue. Each run's FAKECUDA_TRACE says which
calls reached the driver and whether a capture was open at the time."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from routes_common import (COLUMNS, CUBIN, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, DATA, FAKE_DIR, PROBE, PROBE_DIRECT,
                           PROHIBITED, SHIM, Run, column_args)

FAKE_DATA = os.environ["CG_FAKE_DATA"]
PRIME_DUMP = os.environ["CG_PRIME_DUMP"]
PTX = os.path.join(DATA, "kernels_sm90.ptx")
FATBIN = os.path.join(DATA, "kernels_multi.fatbin")
CUBIN_SM80 = os.path.join(DATA, "kernels_sm80.cubin")

CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
LOAD_CALLS = {"cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary",
              "cuLibraryLoadData", "cuLibraryLoadFromFile"}
# What capguard itself asks the driver (shim/driver.h): read-only queries, allowed
# during capture, that change nothing the program can observe.
# Queries capguard makes for itself (all allowed during capture, none with an
# effect): the version, the device's arch, the capture's own id.
CAPGUARD_QUERIES = {"cuDriverGetVersion", "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGetAttribute",
                    "cuStreamGetCaptureInfo", "cuStreamGetFlags",
               "cuLogsRegisterCallback"}


class Call:
    def __init__(self, line):
        m = re.fullmatch(r"(\S+) tid=(\d+) capturing=(\d+) result=(-?\d+)", line)
        if not m:
            raise AssertionError("bad trace line: %r" % line)
        self.name, self.tid, self.capturing, self.result = m[1], int(m[2]), int(m[3]), int(m[4])

    def __repr__(self):
        return "%s(capturing=%d, result=%d)" % (self.name, self.capturing, self.result)


class PrimeRun(Run):
    """A probe run plus the fake driver's trace of it."""

    def __init__(self, proc, log_path, trace_path):
        super().__init__(proc, log_path)
        self.trace = []
        if os.path.exists(trace_path):
            with open(trace_path) as f:
                self.trace = [Call(l.rstrip("\n")) for l in f if l.strip()]

    def calls(self, names, capturing=None):
        names = {names} if isinstance(names, str) else names
        return [c for c in self.trace if c.name in names and
                (capturing is None or (c.capturing > 0) == capturing)]

    def loads_in_capture(self):
        return self.calls(LOAD_CALLS, capturing=True)

    def index(self, call, nth=0):
        """Where the nth call to call (any _ptsz variant included) is in the trace."""
        return [i for i, c in enumerate(self.trace) if c.name in (call, call + "_ptsz")][nth]

    @property
    def summary(self):
        s = self.of_type("summary")
        assert len(s) == 1, self.stderr
        return s[0]

    def verdicts(self):
        return [e["verdict"] for e in self.events]

    def warnings(self, text):
        return [l for l in self.stderr.splitlines() if text in l]


def probe(args, prime, driver=12020, mode="guard", env=None, preload=True, route="dlsym"):
    """route_probe over the fake driver, under capguard unless preload is
    False; mode None leaves CAPGUARD_MODE unset (the default)."""
    exe = PROBE_DIRECT if route == "direct" else PROBE
    e = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
    e.update(LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION=str(driver), CAPGUARD_PRIME=prime)
    if mode is not None:
        e["CAPGUARD_MODE"] = mode
    with tempfile.TemporaryDirectory() as tmp:
        log_path = os.path.join(tmp, "log.jsonl")
        trace_path = os.path.join(tmp, "trace")
        e.update(CAPGUARD_LOG=log_path, FAKECUDA_TRACE=trace_path)
        if preload:
            e["LD_PRELOAD"] = SHIM
        if env:
            e.update(env)
        proc = subprocess.run([exe, "--route", route] + args, env=e, capture_output=True, text=True, timeout=60)
        return PrimeRun(proc, log_path, trace_path)


def dump(prime, outdir=None):
    """The priming file's records as prime_dump reads them."""
    p = subprocess.run([PRIME_DUMP, prime] + ([outdir] if outdir else []), capture_output=True, text=True,
                       timeout=60)
    if p.returncode:
        raise AssertionError("prime_dump failed: " + p.stderr)
    recs = []
    for line in p.stdout.splitlines()[1:]:
        recs.append(dict(kv.split("=", 1) for kv in line.split(" ")))
    return recs


def image_bytes(path):
    """The bytes route_probe hands the driver for a file: PTX gets its NUL."""
    with open(path, "rb") as f:
        b = f.read()
    if path.endswith(".ptx") and not b.endswith(b"\0"):
        b += b"\0"
    return b


class PrimingCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cg-priming-")
        self.prime = os.path.join(self.tmp, "prime.cgp")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def fresh_prime(self, name):
        return os.path.join(self.tmp, name)

    def variant(self, src, name, edit):
        b = bytearray(open(src, "rb").read())
        edit(b)
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(b)
        return path

    def assert_run1(self, r):
        """What run 1 (or a run with an unusable priming file) does on a 12.2
        driver: the load is refused, the capture is lost."""
        self.assertEqual(r.rc, 0, r.stderr)
        self.assertEqual(r.int("op_result"), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, r.stdout)
        self.assertEqual(r.int("end_result"), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        self.assertEqual(r.values["graph_kernels"], "")
        self.assertEqual(r.summary["primed_served"], 0)

    def assert_served(self, r, kernel="cg_test_fill"):
        self.assertEqual(r.rc, 0, r.stderr)
        self.assertEqual(r.int("op_result"), 0, r.stderr)
        self.assertEqual(r.int("launch_result"), 0)
        self.assertEqual(r.int("end_result"), 0)
        self.assertIn(kernel, r.values["graph_kernels"].split(","))
        self.assertEqual(r.loads_in_capture(), [], r.trace)
        self.assertIn("served", r.verdicts())


class Modes(PrimingCase):
    def test_guard_is_the_default_mode(self):
        # Unset CAPGUARD_MODE: the unload is deferred and the image recorded.
        r = probe(["--op", "unload", "--image", CUBIN], self.prime, driver=13000, mode=None)
        self.assertEqual(r.int("op_result"), 0)
        self.assertEqual(r.verdicts(), ["deferred"])
        r = probe(["--op", "load", "--image", CUBIN], self.prime, mode=None)
        self.assertEqual(r.summary["recorded"], 1)
        self.assertEqual(len(dump(self.prime)), 1)

    def scenarios(self):
        """(probe arguments, driver, events capguard reports)"""
        return [(["--op", "load", "--image", CUBIN, "--launch", "cg_test_fill"], 12020, 1),
                (["--op", "load", "--image", CUBIN, "--launch", "cg_test_fill"], 13000, 1),
                (["--op", "fatbin", "--image", FATBIN, "--repeat", "2"], 12020, 2),
                (["--op", "unload", "--image", CUBIN], 13000, 1),
                (["--op", "libunload", "--image", CUBIN], 13000, 1),
                # another thread, not prohibited by a thread-local capture: nothing to report
                (["--op", "load", "--image", CUBIN, "--thread", "other", "--mode", "thread-local"], 12020, 0)]

    def program_view(self, r):
        keys = sorted(k for k in r.values if k not in ("wrapped_owner", "unwrapped_owner"))
        return {k: r.values[k] for k in keys}

    def driver_view(self, r, drop_queries):
        """The trace with thread ids numbered by first appearance."""
        tids, out = {}, []
        for c in r.trace:
            if drop_queries and c.name in CAPGUARD_QUERIES:
                continue
            out.append((c.name, tids.setdefault(c.tid, len(tids)), c.capturing, c.result))
        return out

    def test_report_mode_behaves_as_without_capguard(self):
        # A priming file that holds the image: report mode must neither use nor change it.
        probe(["--op", "load", "--image", CUBIN], self.prime)
        with open(self.prime, "rb") as f:
            before = f.read()
        for args, driver, n_events in self.scenarios():
            with self.subTest(args=" ".join(args), driver=driver):
                plain = probe(args, self.prime, driver=driver, preload=False)
                rep = probe(args, self.prime, driver=driver, mode="report")
                self.assertEqual(rep.rc, plain.rc)
                self.assertEqual(self.program_view(rep), self.program_view(plain))
                self.assertEqual(self.driver_view(rep, True), self.driver_view(plain, False))
                self.assertEqual(len(rep.events), n_events, rep.stderr)  # it did observe
                self.assertEqual(rep.summary["primed_loaded"], 0)
                self.assertEqual(rep.summary["recorded"], 0)
                with open(self.prime, "rb") as f:
                    self.assertEqual(f.read(), before)

    def test_off_mode_is_pure_pass_through(self):
        for args, driver, _ in self.scenarios():
            with self.subTest(args=" ".join(args), driver=driver):
                plain = probe(args, self.prime, driver=driver, preload=False)
                off = probe(args, self.prime, driver=driver, mode="off")
                self.assertEqual(self.program_view(off), self.program_view(plain))
                # Not even a query: the driver sees exactly the program's calls.
                self.assertEqual(self.driver_view(off, False), self.driver_view(plain, False))
                self.assertEqual(off.stderr, "")
                self.assertEqual(off.records, [])  # no log written
                self.assertFalse(os.path.exists(self.prime))

    def test_unknown_mode_says_so_once_and_guards(self):
        # A typo must not turn protection off (docs/reliability.md, attack 11): guard, the
        # default, is kept, and the typo is said once.
        r = probe(["--op", "unload", "--image", CUBIN], self.prime, driver=13000, mode="gaurd")
        self.assertEqual(r.warnings("CAPGUARD_MODE"),
                         ["capguard: CAPGUARD_MODE=gaurd is not a mode (guard, report, off); using guard, the default"])
        # Guard, not report: the unload is deferred to the capture's end.
        self.assertEqual(r.int("op_result"), 0)
        self.assertEqual(r.verdicts(), ["deferred"])
        r = probe(["--op", "load", "--image", CUBIN], self.prime, mode="gaurd")
        self.assertEqual(r.summary["recorded"], 1)
        self.assertTrue(os.path.exists(self.prime))


class RunOneRunTwo(PrimingCase):
    def test_run_1_fails_and_run_2_is_served(self):
        cases = [("load", CUBIN, "cuModuleLoadData"), ("loadex", PTX, "cuModuleLoadDataEx"),
                 ("fatbin", FATBIN, "cuModuleLoadFatBinary"), ("file", CUBIN, "cuModuleLoad")]
        for route in ("direct", "dlsym", "procaddr"):
            for op, image, call in cases:
                with self.subTest(route=route, op=op):
                    prime = self.fresh_prime("%s-%s.cgp" % (route, op))
                    args = ["--op", op, "--image", image, "--launch", "cg_test_fill"]
                    r1 = probe(args, prime, route=route)
                    self.assert_run1(r1)
                    self.assertEqual(r1.verdicts(), ["refused"])
                    self.assertEqual(r1.summary["recorded"], 1)
                    self.assertEqual([c.result for c in r1.calls(call, capturing=True)], [900])

                    r2 = probe(args, prime, route=route)
                    self.assert_served(r2)
                    self.assertEqual(r2.verdicts(), ["served"])
                    self.assertEqual(r2.events[0]["call"], call)
                    # The preload: one load, before the capture began, that succeeded.
                    pre = r2.calls(LOAD_CALLS)
                    self.assertEqual([(c.name, c.capturing, c.result) for c in pre], [("cuModuleLoadData", 0, 0)])
                    self.assertLess(r2.trace.index(pre[0]), r2.index("cuStreamBeginCapture_v2"))
                    s = r2.summary
                    self.assertEqual((s["primed_loaded"], s["primed_served"], s["primed_unused"], s["recorded"]),
                                     (1, 1, 0, 0))
                    self.assertIn("priming: 1 preloaded, 1 served, 0 unused, 0 recorded", r2.stderr)

    def test_an_image_recorded_from_a_file_serves_the_same_bytes_in_memory(self):
        self.assert_run1(probe(["--op", "file", "--image", PTX], self.prime))
        self.assert_served(probe(["--op", "load", "--image", PTX, "--launch", "cg_test_axpy"], self.prime),
                           "cg_test_axpy")

    def test_library_loads_are_recorded_and_served_as_libraries(self):
        """A library load is recorded as one (not as a module image), and the
        next run preloads a CUlibrary before capture and hands it out."""
        for route in ("direct", "dlsym", "procaddr"):
            with self.subTest(route=route):
                prime = self.fresh_prime("lib-%s.cgp" % route)
                args = ["--op", "library", "--image", CUBIN]
                self.assert_run1(probe(args, prime, route=route))
                recs = dump(prime)
                self.assertEqual([(r["modules"], r["libraries"]) for r in recs], [("0", "1")])
                r = probe(args, prime, route=route)
                self.assertEqual((r.int("op_result"), r.int("end_result")), (0, 0))
                self.assertEqual(r.verdicts(), ["served"])
                self.assertEqual(r.loads_in_capture(), [])
                pre = r.calls(LOAD_CALLS)
                self.assertEqual([(c.name, c.capturing, c.result) for c in pre], [("cuLibraryLoadData", 0, 0)])
                self.assertLess(r.trace.index(pre[0]), r.index("cuStreamBeginCapture_v2"))
                self.assertEqual((r.summary["primed_loaded"], r.summary["primed_served"]), (1, 1))
                self.assertEqual(len(dump(prime)), 1)  # nothing new recorded

    def test_a_file_over_the_cap_is_not_loaded(self):
        args = ["--op", "load", "--image", CUBIN, "--launch", "cg_test_fill"]
        self.assert_run1(probe(args, self.prime))
        size = os.path.getsize(self.prime)
        r = probe(args, self.prime, env={"CAPGUARD_PRIME_MAX": str(size - 1)})
        self.assert_run1(r)
        self.assertEqual(r.stderr.count("over CAPGUARD_PRIME_MAX (%d): not loaded" % (size - 1)), 1, r.stderr)
        self.assertEqual(os.path.getsize(self.prime), size)
        self.assert_served(probe(args, self.prime, env={"CAPGUARD_PRIME_MAX": str(size)}))

    def test_unused_records_are_counted(self):
        for image in (CUBIN, PTX, FATBIN):
            probe(["--op", "load", "--image", image], self.prime)
        r = probe(["--op", "load", "--image", PTX, "--launch", "cg_test_fill"], self.prime)
        self.assert_served(r)
        s = r.summary
        self.assertEqual((s["primed_loaded"], s["primed_served"], s["primed_unused"]), (3, 1, 2))
        self.assertEqual(len(r.calls("cuModuleLoadData", capturing=False)), 3)
        self.assertIn("priming: 3 preloaded, 1 served, 2 unused", r.stderr)


class WhatIsReplayed(PrimingCase):
    def test_only_byte_identical_images_are_served(self):
        probe(["--op", "load", "--image", CUBIN], self.prime)
        # Same size, one byte of a kernel name different; and an unrelated image.
        one_byte = self.variant(CUBIN, "axpz.cubin",
                                lambda b: b.__setitem__(b.index(b"cg_test_axpy") + 11, ord("z")))
        self.assertEqual(os.path.getsize(one_byte), os.path.getsize(CUBIN))
        for image in (one_byte, os.path.join(FAKE_DATA, "kernels_sm90.cubin")):
            with self.subTest(image=os.path.basename(image)):
                prime = self.fresh_prime(os.path.basename(image) + ".cgp")
                shutil.copy(self.prime, prime)
                r = probe(["--op", "load", "--image", image], prime)
                self.assert_run1(r)
                self.assertEqual(r.verdicts(), ["refused"])
                self.assertEqual([(c.name, c.result) for c in r.loads_in_capture()], [("cuModuleLoadData", 900)])
                self.assertEqual((r.summary["primed_loaded"], r.summary["primed_unused"]), (1, 1))
                self.assertEqual(len(dump(prime)), 2)  # recorded as an image of its own

    def test_repeated_loads_of_the_same_bytes_are_learned_and_each_served(self):
        # A file that knows one load: the second identical load is the driver's
        # (refused on 12.2), and the file learns that this process needed two.
        probe(["--op", "load", "--image", CUBIN], self.prime)
        self.assertEqual(dump(self.prime)[0]["modules"], "1")
        r = probe(["--op", "load", "--image", CUBIN, "--repeat", "2"], self.prime)
        self.assertEqual(r.verdicts(), ["served", "refused"])
        self.assertEqual(r.int("end_result"), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        self.assertEqual([(d["modules"], d["hits"]) for d in dump(self.prime)], [("2", "2")])
        # Next run: two preloaded, both served, no loader call during capture.
        for repeat in (2, 3):
            r = probe(["--op", "load", "--image", CUBIN, "--repeat", str(repeat), "--launch", "cg_test_fill"],
                      self.prime)
            if repeat == 2:
                self.assert_served(r)
                self.assertEqual(r.verdicts(), ["served", "served"])
                self.assertEqual([(c.capturing, c.result) for c in r.calls(LOAD_CALLS)], [(0, 0), (0, 0)])
                self.assertEqual((r.summary["primed_loaded"], r.summary["primed_served"]), (2, 2))
            else:  # one more than ever seen: the third is new, refused and learned
                self.assertEqual(r.verdicts(), ["served", "served", "refused"])
                self.assertEqual(dump(self.prime)[0]["modules"], "3")
        # On a driver that allows loads, one run learns the whole count.
        fresh = self.fresh_prime("learn.cgp")
        r = probe(["--op", "load", "--image", CUBIN, "--repeat", "4"], fresh, driver=13000)
        self.assertEqual(r.verdicts(), ["allowed"] * 4)
        self.assertEqual(dump(fresh)[0]["modules"], "4")
        r = probe(["--op", "load", "--image", CUBIN, "--repeat", "4", "--launch", "cg_test_fill"], fresh)
        self.assert_served(r)
        self.assertEqual(r.verdicts(), ["served"] * 4)

    def test_records_for_another_arch_are_skipped_not_tried(self):
        for image in (CUBIN, CUBIN_SM80, PTX):  # sm_90 SASS, sm_80 SASS, PTX for compute_90
            probe(["--op", "load", "--image", image], self.prime)
        self.assertEqual(len(dump(self.prime)), 3)
        r = probe(["--op", "load", "--image", CUBIN_SM80, "--launch", "cg_test_fill"], self.prime,
                  env={"FAKECUDA_SM": "80"})
        self.assert_served(r)
        # Only the sm_80 record was loaded; the sm_90 ones were never tried.
        self.assertEqual([(c.name, c.capturing, c.result) for c in r.calls(LOAD_CALLS)],
                         [("cuModuleLoadData", 0, 0)])
        self.assertEqual(r.summary["primed_loaded"], 1)
        r = probe(["--op", "load", "--image", CUBIN, "--launch", "cg_test_fill"], self.prime)
        self.assert_served(r)
        self.assertEqual([c.result for c in r.calls(LOAD_CALLS)], [0, 0])  # sm_90 SASS and the PTX
        self.assertEqual(r.summary["primed_loaded"], 2)

    def test_a_record_that_fails_to_load_is_reported_and_skipped(self):
        # OSABI 0x41 with ELF ABI version 7: capguard reads sm_90 from e_flags
        # bits 8..15, the fake reads bits 0..7 and refuses it for this GPU.
        odd = self.variant(CUBIN, "abi7.cubin", lambda b: b.__setitem__(8, 7))
        probe(["--op", "load", "--image", odd], self.prime)
        probe(["--op", "load", "--image", PTX], self.prime)
        r = probe(["--op", "load", "--image", odd], self.prime)
        self.assert_run1(r)  # not served: its pool slot is empty
        self.assertEqual([(c.capturing, c.result) for c in r.calls(LOAD_CALLS)],
                         [(0, CUDA_ERROR_NO_BINARY_FOR_GPU), (0, 0), (1, 900)])
        lines = r.warnings("failed to load on this device")
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^capguard: priming record [0-9a-f]{12} \(cg_test_\w+\) failed to load on "
                                   r"this device \(error 209\); skipped$")
        self.assertEqual(r.summary["primed_loaded"], 1)  # the PTX record still was

    def test_no_preload_while_another_threads_global_capture_prohibits_it(self):
        probe(["--op", "load", "--image", CUBIN], self.prime)
        # Another thread, on its own context, holds a global capture when this
        # thread first begins one on the primary context: the primary context's
        # preload must wait (on a 12.2 driver it would break that capture).
        args = ["--op", "none", "--second", "global", "--second-ctx", "--second-begin", "before"]
        r = probe(args, self.prime)
        self.assertEqual((r.int("second_begin_result"), r.int("begin_result")), (0, 0))
        self.assertEqual(r.loads_in_capture(), [])
        self.assertEqual([(c.capturing, c.result) for c in r.calls(LOAD_CALLS)], [(0, 0)])  # the other context's
        self.assertEqual((r.int("end_result"), r.int("second_end_result")), (0, 0))
        self.assertEqual(r.summary["primed_loaded"], 1)
        # A thread-local capture there does not prohibit this thread: the preload runs.
        r = probe(["--op", "load", "--image", CUBIN, "--launch", "cg_test_fill", "--second", "thread-local",
                   "--second-ctx", "--second-begin", "before"], self.prime)
        # Both contexts' preloads; the program's own load was served, not passed on.
        self.assertEqual([(c.capturing, c.result) for c in r.calls(LOAD_CALLS)], [(0, 0), (1, 0)])
        self.assertEqual(r.verdicts(), ["served"])
        self.assertEqual((r.int("op_result"), r.int("launch_result"), r.int("end_result")), (0, 0, 0))
        self.assertIn("cg_test_fill", r.values["graph_kernels"].split(","))
        self.assertEqual(r.int("second_end_result"), 0)


class UnusableFiles(PrimingCase):
    def good_file(self):
        probe(["--op", "load", "--image", CUBIN], self.prime)
        self.assertEqual(len(dump(self.prime)), 1)

    def check(self, expect, refused=True, loaded=0):
        """A run that loads the (unusable) recorded image behaves as run 1."""
        r = probe(["--op", "load", "--image", CUBIN], self.prime)
        self.assert_run1(r)
        self.assertEqual(r.summary["primed_loaded"], loaded)
        lines = [l for l in r.stderr.splitlines() if "priming file" in l]
        self.assertTrue(lines, r.stderr)
        self.assertRegex(lines[0], "^capguard: priming file %s: %s" % (re.escape(self.prime), expect))
        if refused:
            self.assertEqual(lines, lines[:1], r.stderr)  # said once, not per load
            self.assertEqual(r.summary["recorded"], 0)
        return r

    def test_corrupt_record(self):
        # The first of two records damaged: it is skipped, the second still serves.
        self.good_file()
        probe(["--op", "load", "--image", PTX], self.prime)
        with open(self.prime, "r+b") as f:
            f.seek(32 + 200)  # inside the first image record's bytes
            b = f.read(1)
            f.seek(32 + 200)
            f.write(bytes([b[0] ^ 0xFF]))
        r = self.check(r"record at offset 32 damaged \(.*\), \d+ bytes skipped", refused=False, loaded=1)
        self.assertEqual(len(r.warnings("priming file")), 1, r.stderr)
        self.assert_served(probe(["--op", "load", "--image", PTX, "--launch", "cg_test_fill"], self.prime))

    def test_torn_last_record(self):
        # A damaged last record cannot be told from an interrupted write.
        self.good_file()
        with open(self.prime, "r+b") as f:
            f.seek(32 + 200)
            b = f.read(1)
            f.seek(32 + 200)
            f.write(bytes([b[0] ^ 0xFF]))
        self.check(r"last \d+ bytes from offset 32 are an incomplete record \(checksum mismatch", refused=False)
        self.assertEqual(len(dump(self.prime)), 1)  # rewritten whole by the run's own recording

    def test_truncated(self):
        self.good_file()
        os.truncate(self.prime, os.path.getsize(self.prime) - 100)
        self.check(r"last \d+ bytes from offset 32 are an incomplete record", refused=False)
        self.assertEqual(len(dump(self.prime)), 1)  # the torn tail was replaced by a whole record

    def test_owned_by_someone_else(self):
        self.good_file()
        os.chown(self.prime, 65534, 65534)
        # trusted as ssh trusts a file: root's or yours; the refusal names the chown
        if os.geteuid() == 0:
            self.check(r"owned by uid 65534, not by root; not used: run 'chown root %s'" % re.escape(self.prime))
        else:
            self.check(r"owned by uid 65534, neither root nor you \(uid %d\); not used: run 'chown %d "
                       % (os.geteuid(), os.geteuid()))

    def test_group_or_other_writable(self):
        for mode in (0o620, 0o602):
            with self.subTest(mode=oct(mode)):
                self.good_file()
                os.chmod(self.prime, mode)
                self.check(r"writable by group or others \(mode %03o\); not used" % mode)
                os.unlink(self.prime)

    def test_symlink(self):
        real = self.fresh_prime("real.cgp")
        probe(["--op", "load", "--image", CUBIN], real)
        os.symlink(real, self.prime)
        self.check(r"is a symbolic link, which capguard does not follow; not used")

    def test_newer_version(self):
        self.good_file()
        with open(self.prime, "r+b") as f:
            f.seek(8)
            f.write((3).to_bytes(2, "little"))
        with open(self.prime, "rb") as f:
            before = f.read()
        self.check(r"format version 3, written by a newer capguard \(this one reads version 2\); left untouched")
        with open(self.prime, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_not_a_priming_file(self):
        with open(self.prime, "wb") as f:
            f.write(b"#!/bin/sh\necho these are someone's notes\n")
        self.check(r"not a capguard priming file; left untouched")


class Recording(PrimingCase):
    def test_eight_concurrent_recorders_store_each_image_once(self):
        distinct = [CUBIN, PTX, FATBIN, os.path.join(FAKE_DATA, "kernels_sm90.cubin"),
                    os.path.join(FAKE_DATA, "kernels.ptx")]
        loads = [distinct[i] for i in (0, 1, 2, 3, 4, 0, 0, 2)]
        for round_ in range(3):
            with self.subTest(round=round_):
                prime = self.fresh_prime("concurrent-%d.cgp" % round_)
                env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
                env.update(LD_LIBRARY_PATH=FAKE_DIR, LD_PRELOAD=SHIM, FAKECUDA_DRIVER_VERSION="12020",
                           CAPGUARD_PRIME=prime, CAPGUARD_MODE="guard", CAPGUARD_QUIET="1")
                logs = [os.path.join(self.tmp, "log-%d-%d.jsonl" % (round_, i)) for i in range(len(loads))]
                procs = [subprocess.Popen([PROBE, "--op", "load", "--image", img], env=dict(env, CAPGUARD_LOG=log),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                         for img, log in zip(loads, logs)]
                for p in procs:
                    _, err = p.communicate(timeout=60)
                    self.assertEqual(p.returncode, 0, err)
                # Each process either recorded its image or (when another had
                # already recorded it before its capture began) was served it.
                needed = {img: 0 for img in distinct}
                for img, log in zip(loads, logs):
                    with open(log) as f:
                        summary = [json.loads(l) for l in f if '"summary"' in l][0]
                    self.assertEqual(summary["recorded"] + summary["primed_served"], 1, summary)
                    needed[img] += 1
                outdir = os.path.join(self.tmp, "out-%d" % round_)
                os.mkdir(outdir)
                recs = dump(prime, outdir)
                stored = [open(os.path.join(outdir, "%s.bin" % i), "rb").read() for i in range(len(recs))]
                want = [image_bytes(p) for p in distinct]
                self.assertEqual(sorted(stored), sorted(want))  # each distinct image exactly once
                # No update lost: an image's hits are the processes that needed
                # it, those that recorded it and those it was served to (a
                # served image counts as needed: attack 5 of docs/reliability.md).
                hits = {s: int(r["hits"]) for s, r in zip(stored, recs)}
                for img in distinct:
                    self.assertEqual(hits[image_bytes(img)], needed[img], img)

    def test_prime_max_is_respected(self):
        probe(["--op", "load", "--image", PTX], self.prime)
        size = os.path.getsize(self.prime)
        cap = size + 4096  # room for a hit record, not for the 12 KiB fatbin
        env = {"CAPGUARD_PRIME_MAX": str(cap)}
        r = probe(["--op", "load", "--image", FATBIN], self.prime, env=env)
        self.assert_run1(r)
        lines = r.warnings("priming file")
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"full \(%d of %d bytes\); an image of %d bytes not recorded" %
                         (size, cap, os.path.getsize(FATBIN)))
        self.assertEqual(os.path.getsize(self.prime), size)
        self.assertEqual(r.summary["recorded"], 0)
        r = probe(["--op", "load", "--image", PTX, "--repeat", "3"], self.prime, env=env, driver=13000)
        self.assertLessEqual(os.path.getsize(self.prime), cap)
        self.assertEqual([rec["hits"] for rec in dump(self.prime)], ["2"])  # 1 + this process's one hit (once per process and image)
        # A cap below one record: nothing is recorded, the file stays within it.
        small = self.fresh_prime("small.cgp")
        r = probe(["--op", "load", "--image", CUBIN, "--repeat", "3"], small, env={"CAPGUARD_PRIME_MAX": "4K"})
        self.assert_run1(r)
        self.assertEqual(len(r.warnings("priming file")), 1, r.stderr)
        self.assertLessEqual(os.path.getsize(small), 4096)
        self.assertEqual(dump(small), [])


class DeferredUnloads(PrimingCase):
    def unload_lines(self, r, call="cuModuleUnload"):
        return [(c.capturing, c.result) for c in r.calls(call)]

    def test_unload_while_prohibited_returns_success_and_runs_once_after_the_end(self):
        for op, call in (("unload", "cuModuleUnload"), ("libunload", "cuLibraryUnload")):
            for col in COLUMNS:
                with self.subTest(op=op, column=col):
                    r = probe(column_args(col) + ["--op", op, "--image", CUBIN], self.prime, driver=13000)
                    self.assertEqual(r.int("op_result"), 0)
                    self.assertEqual(r.int("end_result"), 0)
                    self.assertEqual(len(r.calls(call)), 1, r.trace)
                    if col in PROHIBITED:
                        self.assertEqual(r.verdicts(), ["deferred"])
                        self.assertEqual(self.unload_lines(r, call), [(0, 0)])
                        self.assertGreater(r.index(call), r.index("cuStreamEndCapture"))
                    else:  # not prohibited: straight to the driver, inside the capture
                        self.assertEqual(r.events, [])
                        self.assertEqual(self.unload_lines(r, call), [(1, 0)])

    def test_asked_twice_unloaded_once(self):
        r = probe(["--op", "unload", "--image", CUBIN, "--repeat", "2"], self.prime, driver=13000)
        self.assertEqual(r.int("op_result"), 0)
        self.assertEqual(self.unload_lines(r), [(0, 0)])

    def test_a_served_module_is_unloaded_for_real_by_its_owner(self):
        probe(["--op", "load", "--image", CUBIN], self.prime)
        for when in ("after", "in"):
            with self.subTest(unload=when):
                r = probe(["--op", "load", "--image", CUBIN, "--launch", "cg_test_fill", "--unload-loaded", when],
                          self.prime)
                self.assertEqual((r.int("op_result"), r.int("launch_result"), r.int("end_result")), (0, 0, 0))
                self.assertEqual(r.loads_in_capture(), [])
                if when == "after":  # unloaded mid-capture, the graph's kernel is gone with it
                    self.assertEqual(r.values["graph_kernels"], "cg_test_fill")
                self.assertEqual(r.int("unload_loaded_result"), 0)
                self.assertEqual(self.unload_lines(r), [(0, 0)])
                self.assertGreater(r.index("cuModuleUnload"), r.index("cuStreamEndCapture"))
                self.assertEqual(r.verdicts(), ["served", "deferred"] if when == "in" else ["served"])
                # Never unloaded twice (the fake answers a second unload with 400).
                self.assertNotIn(CUDA_ERROR_INVALID_HANDLE, [c.result for c in r.calls("cuModuleUnload")])

    def test_pending_unloads_at_exit_are_left_alone(self):
        r = probe(["--op", "unload", "--image", CUBIN, "--no-end"], self.prime, driver=13000)
        self.assertEqual(r.rc, 0, r.stderr)
        self.assertEqual(r.int("op_result"), 0)
        self.assertEqual(r.calls("cuModuleUnload"), [])
        lines = r.warnings("deferred calls (unloads")
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^capguard: 1 deferred calls \(unloads, frees, graph-exec destroys\) were "
                                   r"still waiting for a capture to end at exit")

    def test_the_unload_waits_for_the_last_capture_that_prohibited_it(self):
        # Thread-local capture here, global capture on another thread: both
        # prohibit this thread's unload, in either order of ending.
        for second_end in ("before", "after"):
            with self.subTest(global_ends=second_end + " the thread-local one"):
                r = probe(["--op", "unload", "--image", CUBIN, "--mode", "thread-local", "--second", "global",
                           "--second-end", second_end], self.prime, driver=13000)
                self.assertEqual(r.verdicts(), ["deferred"])
                self.assertEqual(r.events[0]["capture"]["mode"], "thread-local")
                self.assertEqual(r.events[0].get("prohibitors", 2), 2)
                self.assertEqual((r.int("end_result"), r.int("second_end_result")), (0, 0))
                self.assertEqual(self.unload_lines(r), [(0, 0)])
                self.assertGreater(r.index("cuModuleUnload"), r.index("cuStreamEndCapture", 1))
        # Global capture here, thread-local on another thread: only this
        # thread's own capture prohibited the unload, so it runs at its end.
        r = probe(["--op", "unload", "--image", CUBIN, "--mode", "global", "--second", "thread-local"],
                  self.prime, driver=13000)
        self.assertEqual(self.unload_lines(r), [(1, 0)])
        self.assertLess(r.index("cuModuleUnload"), r.index("cuStreamEndCapture", 1))


class EmulatedDriver(PrimingCase):
    EMULATE = {"CAPGUARD_EMULATE_DRIVER": "12020"}

    def test_capguard_refuses_a_prohibited_load_itself(self):
        for op, image in (("load", CUBIN), ("loadex", PTX), ("fatbin", FATBIN), ("file", CUBIN)):
            with self.subTest(op=op):
                r = probe(["--op", op, "--image", image], self.fresh_prime(op), driver=13000, env=self.EMULATE)
                self.assert_run1(r)
                self.assertEqual(r.verdicts(), ["emulated"])
                self.assertEqual(r.loads_in_capture(), [])
                # The driver itself ended the capture fine; capguard failed it and dropped the graph.
                self.assertEqual([c.result for c in r.calls("cuStreamEndCapture")], [0])
                self.assertEqual(len(r.calls("cuGraphDestroy")), 1)

    def test_not_when_the_thread_is_not_prohibited(self):
        for col in COLUMNS:
            with self.subTest(column=col):
                r = probe(column_args(col) + ["--op", "load", "--image", CUBIN], self.fresh_prime("%s-%s-%s" % col),
                          driver=13000, env=self.EMULATE)
                if col in PROHIBITED:
                    self.assert_run1(r)
                else:
                    self.assertEqual((r.int("op_result"), r.int("end_result")), (0, 0))
                    self.assertEqual([c.result for c in r.loads_in_capture()], [0])
                    self.assertEqual(r.events, [])

    def test_run_2_is_served(self):
        args = ["--op", "load", "--image", CUBIN, "--launch", "cg_test_fill"]
        self.assert_run1(probe(args, self.prime, driver=13000, env=self.EMULATE))
        self.assert_served(probe(args, self.prime, driver=13000, env=self.EMULATE))


class Rescue(PrimingCase):
    def test_the_load_is_made_relaxed_for_one_call(self):
        for driver, env in ((12020, {}), (13000, {"CAPGUARD_EMULATE_DRIVER": "12020"})):
            with self.subTest(driver=driver, env=env):
                env = dict(env, CAPGUARD_RESCUE="1")
                r = probe(["--op", "load", "--image", CUBIN, "--repeat", "2", "--launch", "cg_test_fill",
                           "--print-mode"], self.fresh_prime(str(driver)), driver=driver,
                          env=env)
                self.assertEqual(r.int("op_result"), 0, r.stderr)
                self.assertEqual(r.int("launch_result"), 0)
                self.assertEqual(r.int("end_result"), 0)
                self.assertIn("cg_test_fill", r.values["graph_kernels"].split(","))
                # The second load is still seen as prohibited: the thread's
                # own mode came back after the first rescued call.
                self.assertEqual(r.verdicts(), ["rescued", "rescued"])
                self.assertEqual(r.int("thread_mode_after"), 0)  # global, as the program left it
                self.assertEqual([c.result for c in r.loads_in_capture()], [0, 0])
                names = [c.name for c in r.trace]
                for i, c in enumerate(r.trace):
                    if c.name == "cuModuleLoadData" and c.capturing:
                        self.assertEqual(names[i - 1], "cuThreadExchangeStreamCaptureMode")
                        self.assertEqual(names[i + 1], "cuThreadExchangeStreamCaptureMode")
                self.assertEqual(r.summary["verdicts"]["rescued"], 2)
                self.assertIn("rescued", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=1)
