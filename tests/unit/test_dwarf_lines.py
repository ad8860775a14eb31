"""cg_dwarf_line_of (detect/frames/dwarf_lines.c) against binutils' readelf, for
every instruction of a small two-file program (a header's inline function
among them: a line table with several files) built by gcc and clang with
DWARF 2, 4 and 5, as a PIE, a non-PIE executable and a shared library, at -O0
and -O2: the same file:line at each address as binutils' readelf decodes, or
no answer where it has none, with and without the index the shim keeps (which
starts again for another file); a stripped object's line table found in its
separate debug file by build ID. Compressed debug sections and a cut file get no answer, quietly."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

PROBE = sys.argv[1] if len(sys.argv) > 1 else os.environ["CG_DWARF_PROBE"]

HEADER = """static inline int scaled(int x) {
  int y = x * 3;
  return y + 1;
}
"""
MAIN = """#include "scale.h"
int helper(int);
int entry(int v) {
  int a = scaled(v);
  int b = helper(a);
  return a + b;
}
int main(int argc, char **argv) {
  (void)argv;
  return entry(argc);
}
"""
HELPER = """#include "scale.h"
int helper(int v) {
  int s = 0;
  for (int i = 0; i < v; i++)
    s += scaled(i);
  return s;
}
"""


def have(tool):
    return shutil.which(tool) is not None


class DwarfLines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cg-dwarf-")
        for name, text in (("scale.h", HEADER), ("main.c", MAIN), ("helper.c", HELPER)):
            with open(os.path.join(cls.tmp, name), "w") as f:
                f.write(text)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def build(self, cc, flags, out, shared=False):
        path = os.path.join(self.tmp, out)
        srcs = ["helper.c"] if shared else ["main.c", "helper.c"]
        subprocess.run([cc] + flags + (["-shared", "-fPIC"] if shared else []) + ["-o", path] + srcs,
                       cwd=self.tmp, check=True, capture_output=True)
        return path

    def addresses(self, path):
        """Every instruction address of the program's own functions."""
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True,
                              check=True).stdout
        out, on = [], False
        for line in text.splitlines():
            m = re.match(r"^[0-9a-f]+ <(\w+)>:$", line)
            if m:
                on = m.group(1) in ("entry", "main", "helper", "scaled")
                continue
            m = re.match(r"^\s+([0-9a-f]+):", line)
            if on and m:
                out.append(m.group(1))
        return out

    def mine(self, path, addrs, indexed=False):
        args = [PROBE] + (["--indexed"] if indexed else []) + [path] + addrs
        text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        return dict(line.split(" ", 1) for line in text.splitlines())

    def theirs(self, path, addrs):
        """The answers of binutils' own decoding of the line table (readelf's
        decoded lines: each row holds [its address, the next row's) of its
        sequence; at one address the last row counts). Not addr2line: binutils
        2.40's names gcc 12's DWARF 5 file 1 as file 0 (a header's inline
        function placed in the .c file that includes it)."""
        text = subprocess.run(["readelf", "--debug-dump=decodedline", path], capture_output=True, text=True,
                              check=True).stdout
        ranges, prev = [], None
        for line in text.splitlines():
            m = re.match(r"^(\S+)\s+(\d+|-)\s+(0x[0-9a-f]+)", line)
            if not m or line.rstrip().endswith(":"):
                continue
            f, n, a = m.group(1), m.group(2), int(m.group(3), 16)
            if prev and prev[2] < a:
                ranges.append((prev[2], a, prev[0], prev[1]))
            prev = None if n == "-" else (f, n, a)
        answers = {}
        for a in addrs:
            pc = int(a, 16)
            hit = [r for r in ranges if r[0] <= pc < r[1]]
            answers[format(pc, "x")] = "%s:%s" % (os.path.basename(hit[0][2]), hit[0][3]) \
                if hit and hit[0][3] != "0" else "??"
        return answers

    def compare(self, cc, flags, shared=False):
        out = "%s%s%s" % (cc, "".join(flags).replace("-", "_"), "_so" if shared else "")
        path = self.build(cc, flags, out, shared)
        addrs = self.addresses(path)
        self.assertGreater(len(addrs), 10)
        mine, theirs = self.mine(path, addrs), self.theirs(path, addrs)
        self.assertEqual(mine, theirs)
        # through one index, as the shim looks: in order, and from the last
        # address back (units found through the ranges kept, not scanned)
        self.assertEqual(self.mine(path, addrs, indexed=True), theirs)
        self.assertEqual(self.mine(path, addrs[::-1], indexed=True), theirs)
        self.assertGreater(sum(v != "??" for v in mine.values()), len(addrs) // 2)
        # the header's inline function is named by its own file (a second file of the table)
        if "-O0" in flags:
            self.assertTrue(any(v.startswith("scale.h:") for v in mine.values()), mine)
        return path

    def test_versions_compilers_and_object_kinds(self):
        for cc in [c for c in ("gcc", "clang") if have(c)]:
            for version in ("-gdwarf-2", "-gdwarf-4", "-gdwarf-5"):
                for opt in ("-O0", "-O2"):
                    for kind, flags, shared in (("pie", ["-fPIE", "-pie"], False),
                                                ("nopie", ["-fno-PIE", "-no-pie"], False),
                                                ("so", [], True)):
                        with self.subTest(cc=cc, version=version, opt=opt, kind=kind):
                            self.compare(cc, [version, opt] + flags, shared)

    def test_index_starts_again_for_another_file(self):
        one = self.build("gcc", ["-g", "-O0"], "one")
        other = self.build("clang", ["-g", "-O0", "-no-pie", "-fno-PIE"], "other")
        a1, a2 = self.addresses(one), self.addresses(other)
        want1, want2 = self.theirs(one, a1), self.theirs(other, a2)
        text = subprocess.run([PROBE, "--indexed", one] + a1 + ["@" + other] + a2 + ["@" + one] + a1,
                              capture_output=True, text=True, check=True).stdout.splitlines()
        got = [line.split(" ", 1)[1] for line in text]
        self.assertEqual(got, [want1[format(int(a, 16), "x")] for a in a1] +
                         [want2[format(int(a, 16), "x")] for a in a2] +
                         [want1[format(int(a, 16), "x")] for a in a1])

    def test_separate_debug_file_by_build_id(self):
        whole = self.build("gcc", ["-g", "-O0", "-Wl,--build-id"], "whole_bid")
        addrs = self.addresses(whole)
        want = self.theirs(whole, addrs)
        stripped = os.path.join(self.tmp, "stripped_bid")
        debug = os.path.join(self.tmp, "stripped_bid.debug")
        subprocess.run(["objcopy", "--only-keep-debug", whole, debug], check=True)
        subprocess.run(["objcopy", "--strip-debug", whole, stripped], check=True)
        note = subprocess.run(["readelf", "-n", stripped], capture_output=True, text=True, check=True).stdout
        build_id = re.search(r"Build ID: ([0-9a-f]+)", note).group(1)
        root = os.path.join(self.tmp, "debug-root")
        os.makedirs(os.path.join(root, ".build-id", build_id[:2]), exist_ok=True)
        shutil.copy(debug, os.path.join(root, ".build-id", build_id[:2], build_id[2:] + ".debug"))
        run = lambda *extra: dict(line.split(" ", 1) for line in subprocess.run(
            [PROBE, "--indexed"] + list(extra) + [stripped] + addrs, capture_output=True, text=True,
            check=True).stdout.splitlines())
        self.assertEqual(set(run().values()), {"??"})  # no line table in the stripped file itself
        self.assertEqual(run("--debug-root", root), want)
        self.assertEqual(set(run("--debug-root", os.path.join(self.tmp, "nowhere")).values()), {"??"})

    def test_compressed_debug_sections_get_no_answer(self):
        path = self.build("gcc", ["-g", "-O0", "-gz=zlib"], "gz")
        addrs = self.addresses(path)
        self.assertEqual(set(self.mine(path, addrs).values()), {"??"})

    def test_cut_file_gets_no_answer(self):
        path = self.build("gcc", ["-g", "-O0"], "whole")
        addrs = self.addresses(path)
        with open(path, "rb") as f:
            data = f.read()
        for keep in (0, 16, 64, len(data) // 2, len(data) - 100):
            cut = os.path.join(self.tmp, "cut")
            with open(cut, "wb") as f:
                f.write(data[:keep])
            # the section headers are at the file's end: a cut file has none
            self.assertEqual(set(self.mine(cut, addrs[:5]).values()), {"??"})
        self.assertEqual(self.mine("/nonexistent/object", addrs[:1]), {addrs[0].lstrip("0"): "??"})


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
