"""capguard's own stderr lines name native sites as a person reads them:
the source line of the call where the object's DWARF line table says (a -g
executable, PIE or not), the function demangled in a C++ program, and the
object and offset alone when the file has no debug information (stripped).
The log's stacks keep the form capguard report parses, and the report prints
the same site as stderr. The probes (lines_probe.c, lines_probe.cc) are
compiled here, each way, with the build's compilers, against the fake
driver."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from routes_common import FAKE_DIR, SHIM

HERE = os.path.dirname(os.path.abspath(__file__))
CC = os.environ.get("CG_CC", "cc")
CXX = os.environ.get("CG_CXX", "c++")
CLI = os.environ["CG_CLI"]


def marker_line(source, name):
    """The line of source that ends in the marker LINE:name."""
    with open(os.path.join(HERE, source)) as f:
        hits = [i for i, text in enumerate(f, 1) if text.rstrip().endswith("/* LINE:%s */" % name)]
    assert len(hits) == 1, (source, name, hits)
    return hits[0]


class FrameLines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cg-lines-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def build(self, name, compiler, source, flags):
        exe = os.path.join(self.tmp, name)
        cmd = compiler.split() + ["-g", "-O0"] + flags + ["-o", exe, os.path.join(HERE, source),
                                                         "-L" + FAKE_DIR, "-lcuda"]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return exe

    def run_under_shim(self, exe):
        log = exe + ".jsonl"
        env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR, LD_PRELOAD=SHIM, CAPGUARD_MODE="report",
                   CAPGUARD_LOG=log, CAPGUARD_PRIME=exe + ".cgp")
        proc = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("alloc_result=900", proc.stdout)
        with open(log) as f:
            records = [json.loads(line) for line in f if line.strip()]
        return proc.stderr, records, log

    def began_and_top(self, stderr):
        began = re.search(r"^  capture began: (.*)$", stderr, re.M)
        top = re.search(r"^    #0 (.*) \[0x[0-9a-f]+\]$", stderr, re.M)
        self.assertTrue(began and top, stderr)
        return began.group(1), top.group(1)

    def check_c(self, name, flags):
        exe = self.build(name, CC, "lines_probe.c", flags)
        stderr, records, log = self.run_under_shim(exe)
        began, top = self.began_and_top(stderr)
        begin_at = marker_line("lines_probe.c", "begin")
        alloc_at = marker_line("lines_probe.c", "alloc")
        # no exported symbols: the function from the executable's symbol
        # table, then the call's line
        self.assertRegex(began, r"^%s\(begin\+0x[0-9a-f]+\) at lines_probe\.c:%d$" % (name, begin_at))
        self.assertRegex(top, r"^%s\(allocate\+0x[0-9a-f]+\) at lines_probe\.c:%d$" % (name, alloc_at))
        broke = re.search(r"^capguard: capture 1 .*began at (.*)\) broke.*first offender cuMemAlloc_v2 at (.*) "
                          r"\(refused", stderr, re.M)
        self.assertTrue(broke, stderr)
        self.assertEqual(broke.group(1), began)
        self.assertEqual(broke.group(2), top)
        # the log: the same began site; its stacks as capguard report parses them
        event = [r for r in records if r.get("type") == "event"][0]
        self.assertEqual(event["capture"]["began"], began)
        self.assertRegex(event["native_stack"][0], r"^%s\+0x[0-9a-f]+ \[0x[0-9a-f]+\]$" % name)
        # capguard report names the call's line and the function as stderr did
        report = subprocess.run([CLI, "report", log], capture_output=True, text=True, timeout=60)
        self.assertIn(top, report.stdout)
        self.assertIn(began, report.stdout)
        return exe

    def test_pie_executable(self):
        self.check_c("lines_pie", ["-fPIE", "-pie"])

    def test_non_pie_executable(self):
        self.check_c("lines_nopie", ["-fno-PIE", "-no-pie"])

    def test_stripped_executable_keeps_object_and_offset(self):
        exe = self.build("lines_stripped", CC, "lines_probe.c", ["-fPIE", "-pie"])
        subprocess.run(["strip", "--strip-all", exe], check=True)
        stderr, _, _ = self.run_under_shim(exe)
        began, top = self.began_and_top(stderr)
        self.assertRegex(began, r"^lines_stripped\+0x[0-9a-f]+$")
        self.assertRegex(top, r"^lines_stripped\+0x[0-9a-f]+$")

    def test_cxx_names_demangled(self):
        exe = self.build("lines_cxx", CXX, "lines_probe.cc", ["-rdynamic"])
        stderr, records, log = self.run_under_shim(exe)
        began, top = self.began_and_top(stderr)
        begin_at = marker_line("lines_probe.cc", "begin")
        alloc_at = marker_line("lines_probe.cc", "alloc")
        self.assertRegex(began, r"^lines_cxx\(lines::Graph::capture_begin\(std::.*string.* const&\)\+0x[0-9a-f]+\) "
                                r"at lines_probe\.cc:%d$" % begin_at)
        self.assertRegex(top, r"^lines_cxx\(lines::Graph::allocate\(unsigned long\)\+0x[0-9a-f]+\) "
                              r"at lines_probe\.cc:%d$" % alloc_at)
        self.assertNotIn("_ZN5lines", stderr)
        # the log keeps the mangled name, which capguard report demangles and
        # resolves to the same text
        event = [r for r in records if r.get("type") == "event"][0]
        self.assertRegex(event["native_stack"][0], r"^lines_cxx\(_ZN5lines5Graph8allocateEm\+0x[0-9a-f]+\) ")
        report = subprocess.run([CLI, "report", log], capture_output=True, text=True, timeout=60)
        self.assertIn(top, report.stdout)
        self.assertIn(began, report.stdout)

    def test_cxx_not_exported_named_from_symbol_table(self):
        # no -rdynamic: dladdr has no name for the methods; the shim's stderr,
        # capguard report and run's summary name them from the executable's
        # symbol table, demangled, with the call's line
        exe = self.build("lines_hidden", CXX, "lines_probe.cc", [])
        stderr, records, log = self.run_under_shim(exe)
        began, top = self.began_and_top(stderr)
        begin_at = marker_line("lines_probe.cc", "begin")
        alloc_at = marker_line("lines_probe.cc", "alloc")
        self.assertRegex(began, r"^lines_hidden\(lines::Graph::capture_begin\(std::.*string.* const&\)\+0x[0-9a-f]+\) "
                                r"at lines_probe\.cc:%d$" % begin_at)
        self.assertRegex(top, r"^lines_hidden\(lines::Graph::allocate\(unsigned long\)\+0x[0-9a-f]+\) "
                              r"at lines_probe\.cc:%d$" % alloc_at)
        # the log's stacks keep the loader's form, which capguard report names
        event = [r for r in records if r.get("type") == "event"][0]
        self.assertRegex(event["native_stack"][0], r"^lines_hidden\+0x[0-9a-f]+ \[0x[0-9a-f]+\]$")
        report = subprocess.run([CLI, "report", log], capture_output=True, text=True, timeout=60)
        self.assertRegex(report.stdout, r"began lines_hidden\(lines::Graph::capture_begin\(std::.*string.* const&\)"
                                        r"\+0x[0-9a-f]+\) at lines_probe\.cc:%d\)" % begin_at)
        self.assertRegex(report.stdout, r"first offender cuMemAlloc_v2 at lines_hidden\(lines::Graph::allocate"
                                        r"\(unsigned long\)\+0x[0-9a-f]+\) at lines_probe\.cc:%d " % alloc_at)
        self.assertNotIn("lines_hidden+0x", report.stdout)
        self.assertNotIn("_ZN5lines", report.stdout)


if __name__ == "__main__":
    unittest.main()
