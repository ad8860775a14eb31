"""The diagnosis of a broken capture names where it began, the Python line
and the native caller, for every capture, however the begin site was found
(capguard keeps begin sites by return address, by native path and
by a fingerprint of the Python frames, and must never name an earlier
capture's site).

A CPython program over the fake driver begins captures from four Python
functions (each its own marked line): three through a libcudart stand-in
from three native callers (cg_began_from_a, cg_began_from_b, and
cg_began_from_c, whose frame changes size from call to call, in
began_callers.c), one through ctypes straight to the driver; at varying Python depths, in an order
that revisits each site. Then from code objects made and freed one after
another (exec'd "cells", as a notebook runs them), each beginning at its own
line. Every capture is broken by a stream sync inside it. Checked, in guard
mode: with a log, every capture record's "began" (and its broken_by's
offender); without a log, the stderr diagnosis of each distinct site (the
line saying that capture broke, "began at ...").

The interpreters: this one, and any listed in CG_TEST_PYTHONS
(colon-separated), so that each CPython layout capguard reads in place
(3.11, 3.12, 3.13) can be checked where it is installed."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SHIM, FAKE_DIR, CALLERS = os.environ["CG_SHIM"], os.environ["CG_FAKE_DIR"], os.environ["CG_BEGAN_CALLERS"]

PROGRAM = r'''
import ctypes, sys
cu = ctypes.CDLL("libcuda.so.1")
callers = ctypes.CDLL(sys.argv[1])
P = ctypes.c_void_p
dev, ctx, s, g = ctypes.c_int(), P(), P(), P()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuStreamCreate(ctypes.byref(s), 1) == 0
begin_fn = ctypes.cast(cu.cuStreamBeginCapture_v2, P)
from_a, from_b, from_c = callers.cg_began_from_a, callers.cg_began_from_b, callers.cg_began_from_c
for f in (from_a, from_b):
    f.argtypes = [P, P, ctypes.c_int]
from_c.argtypes = [P, P, ctypes.c_int, ctypes.c_int]
pads = iter([0, 16, 48, 96, 8, 200, 0, 32])


def begin_a():
    return from_a(begin_fn, s, 0)  # began-a


def begin_b():
    return from_b(begin_fn, s, 0)  # began-b


def begin_c():
    return from_c(begin_fn, s, 0, next(pads))  # began-c


def begin_direct():
    return cu.cuStreamBeginCapture_v2(s, 0)  # began-direct


def broken_capture(begin):
    assert begin() == 0
    sync = cu.cuStreamSynchronize(s)
    end = cu.cuStreamEndCapture(s, ctypes.byref(g))
    print("capture", begin.__name__, sync, end, flush=True)


def deeper(n, begin):
    if n:
        return deeper(n - 1, begin)
    return broken_capture(begin)


for i, begin in enumerate([begin_a, begin_b, begin_a, begin_direct, begin_b, begin_c, begin_b, begin_c, begin_a,
                           begin_c, begin_direct, begin_c, begin_a, begin_c, begin_b, begin_c]):
    deeper(i % 3 * 7, begin)

for cell in range(4):
    src = "\n" * cell + "assert cu.cuStreamBeginCapture_v2(s, 0) == 0\n"
    src += "print('capture cell', cu.cuStreamSynchronize(s), cu.cuStreamEndCapture(s, ctypes.byref(g)), flush=True)\n"
    exec(compile(src, "<cell%d>" % cell, "exec"), globals())
'''

ORDER = ["a", "b", "a", "direct", "b", "c", "b", "c", "a", "c", "direct", "c", "a", "c", "b", "c"]
NATIVE = {"a": "libcg_began_callers.so(cg_began_from_a+", "b": "libcg_began_callers.so(cg_began_from_b+",
          "c": "libcg_began_callers.so(cg_began_from_c+"}


def interpreters():
    extra = [p for p in os.environ.get("CG_TEST_PYTHONS", "").split(":") if p]
    return [sys.executable] + extra


class BeganBroken(unittest.TestCase):
    def run_program(self, python, tmp, log):
        script = os.path.join(tmp, "began_broken_probe.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
        env.update(LD_PRELOAD=SHIM, LD_LIBRARY_PATH=FAKE_DIR, CAPGUARD_MODE="guard",
                   CAPGUARD_PRIME=os.path.join(tmp, "prime"))
        if log:
            env["CAPGUARD_LOG"] = log
        p = subprocess.run([python, script, CALLERS], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        ends = [row.split() for row in p.stdout.splitlines() if row.startswith("capture ")]
        self.assertEqual(len(ends), len(ORDER) + 4, p.stdout)
        for row in ends:  # every capture broke: the sync refused (900), the end invalidated (901)
            self.assertEqual(row[2:], ["900", "901"], row)
        lines = {}
        for no, text in enumerate(PROGRAM.splitlines(), 1):
            for tag in ("a", "b", "c", "direct"):
                if text.rstrip().endswith("# began-" + tag):
                    lines[tag] = no
        self.assertEqual(len(lines), 4)
        return script, lines, p.stderr

    def expected(self, script, lines):
        want = ["%s:%d in begin_%s" % (script, lines[k], k) for k in ORDER]
        want += ["<cell%d>:%d in <module>" % (cell, cell + 1) for cell in range(4)]
        return want

    def test_every_record_names_its_begin(self):
        for python in interpreters():
            with self.subTest(python=python), tempfile.TemporaryDirectory() as tmp:
                log = os.path.join(tmp, "log.jsonl")
                script, lines, _ = self.run_program(python, tmp, log)
                with open(log) as f:
                    records = [r for r in map(json.loads, f) if r.get("type") == "capture"]
                self.assertEqual(len(records), len(ORDER) + 4)
                for i, (rec, want) in enumerate(zip(records, self.expected(script, lines))):
                    began = rec["began"]
                    self.assertNotEqual(rec["status"], "ended", rec)
                    self.assertTrue(began == want or began.startswith(want + " ("),
                                    "capture %d: began %r, wanted %r" % (i, began, want))
                    tag = ORDER[i] if i < len(ORDER) else None
                    if tag in NATIVE:
                        self.assertIn(" (" + NATIVE[tag], began, "capture %d names the wrong native caller" % i)
                    self.assertEqual(rec["broken_by"]["call"], "cuStreamSynchronize", rec)

    def test_stderr_names_each_begin(self):
        for python in interpreters():
            with self.subTest(python=python), tempfile.TemporaryDirectory() as tmp:
                script, lines, err = self.run_program(python, tmp, None)
                # One line per distinct broken capture (same start, same
                # first offender: counted), naming where it began.
                for want in self.expected(script, lines):
                    self.assertIn("began at " + want, err)
                for tag, native in NATIVE.items():
                    self.assertIn("%s:%d in begin_%s (%s" % (script, lines[tag], tag, native), err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
