"""Where a capture began, in a Python program: the report and the log name
the Python line that began the capture, not only a native frame (libffi's,
for a ctypes caller). A CPython process over the fake driver (12.2) begins a
capture from a function of its own, through ctypes, and loads a module in
it; capguard's event for the refused load must carry "began" starting with
this file's line of the begin (found from its marker) and that function."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SHIM, FAKE_DIR, DATA = os.environ["CG_SHIM"], os.environ["CG_FAKE_DIR"], os.environ["CG_DATA"]

PROGRAM = r'''
import ctypes, sys
cu = ctypes.CDLL("libcuda.so.1")
P = ctypes.c_void_p
dev, ctx, s, mod, g = ctypes.c_int(), P(), P(), P(), P()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuStreamCreate(ctypes.byref(s), 1) == 0
image = open(sys.argv[1], "rb").read()

def begin_the_capture():
    return cu.cuStreamBeginCapture_v2(s, 0)  # capture-begins-here

assert begin_the_capture() == 0
print("load", cu.cuModuleLoadData(ctypes.byref(mod), image))
print("end", cu.cuStreamEndCapture(s, ctypes.byref(g)))
'''


# Six frames of a framework's own code (a path with /torch/ in it: capguard
# looks past them) between the capture's begin and the line to name, and two
# such lines: the innermost frames are the same for both begins.
MACHINERY = r'''
def capture_begin(begin, s):
    return step1(begin, s)
def step1(begin, s):
    return step2(begin, s)
def step2(begin, s):
    return step3(begin, s)
def step3(begin, s):
    return step4(begin, s)
def step4(begin, s):
    return begin(s, 0)
'''

DEEP_PROGRAM = r'''
import ctypes, sys
sys.path.insert(0, sys.argv[2])
from torch import graphs_like
cu = ctypes.CDLL("libcuda.so.1")
P = ctypes.c_void_p
dev, ctx, s, mod, g = ctypes.c_int(), P(), P(), P(), P()
assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuStreamCreate(ctypes.byref(s), 1) == 0
image = open(sys.argv[1], "rb").read()

def one(begins):
    assert begins() == 0
    print("load", cu.cuModuleLoadData(ctypes.byref(mod), image))
    cu.cuStreamEndCapture(s, ctypes.byref(g))

def first_site():
    return graphs_like.capture_begin(cu.cuStreamBeginCapture_v2, s)  # site-one

def second_site():
    return graphs_like.capture_begin(cu.cuStreamBeginCapture_v2, s)  # site-two

one(first_site)
one(second_site)
one(first_site)
'''


class PythonBeganPastFramework(unittest.TestCase):
    def test_each_began_names_its_line_past_a_frameworks_frames(self):
        # capguard keeps a site under a key of the innermost few frames only
        # when the site lies among them; here it does not, and the two lines
        # share those frames.
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "pkg", "torch"))
            open(os.path.join(tmp, "pkg", "torch", "__init__.py"), "w").close()
            with open(os.path.join(tmp, "pkg", "torch", "graphs_like.py"), "w") as f:
                f.write(MACHINERY)
            script = os.path.join(tmp, "deep_probe.py")
            with open(script, "w") as f:
                f.write(DEEP_PROGRAM)
            lines = {m: next(i for i, t in enumerate(DEEP_PROGRAM.splitlines(), 1) if m in t)
                     for m in ("site-one", "site-two")}
            log = os.path.join(tmp, "log.jsonl")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
            env.update(LD_PRELOAD=SHIM, LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="12020",
                       CAPGUARD_LOG=log, CAPGUARD_MODE="report")
            p = subprocess.run([sys.executable, script, os.path.join(DATA, "kernels_sm90.cubin"),
                                os.path.join(tmp, "pkg")], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.count("load 900"), 3, p.stdout)
            with open(log) as f:
                events = [r for r in map(json.loads, f) if r.get("type") == "event"]
            began = [e["capture"]["began"] for e in events]
            self.assertEqual(len(began), 3, events)
            want = ["%s:%d in %s" % (script, lines[m], f) for m, f in
                    (("site-one", "first_site"), ("site-two", "second_site"), ("site-one", "first_site"))]
            for got, w in zip(began, want):
                self.assertTrue(got.startswith(w), (got, w))


class PythonBegan(unittest.TestCase):
    def test_began_names_the_python_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "began_probe.py")
            with open(script, "w") as f:
                f.write(PROGRAM)
            line = next(i for i, t in enumerate(PROGRAM.splitlines(), 1) if "capture-begins-here" in t)
            log = os.path.join(tmp, "log.jsonl")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
            env.update(LD_PRELOAD=SHIM, LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="12020",
                       CAPGUARD_LOG=log, CAPGUARD_MODE="report")
            p = subprocess.run([sys.executable, script, os.path.join(DATA, "kernels_sm90.cubin")], env=env,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("load 900", p.stdout)
            with open(log) as f:
                events = [r for r in map(json.loads, f) if r.get("type") == "event"]
            self.assertEqual(len(events), 1, events)
            began = events[0]["capture"]["began"]
            self.assertTrue(began.startswith("%s:%d in begin_the_capture (" % (script, line)), began)
            self.assertIn("capture began: %s:%d in begin_the_capture" % (script, line), p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
