#!/usr/bin/env python3
"""Priming across contexts and cuModuleLoadDataEx options, on the real driver
(ctypes on libcuda.so.1, no torch), guard mode with CAPGUARD_EMULATE_DRIVER=12020
where the driver would allow a load during capture:

  contexts: the cubin (tests/data/kernels_sm90.cubin) is learnt by a load
    refused during capture on the emulated 12.2 driver; then 6 contexts are
    created, used for one capture whose load is served, and destroyed, in
    turn; then the primary context makes a capture, is reset
    (cuDevicePrimaryCtxReset), retained again and makes another. Every load
    must be served a live module of its own context: cuModuleGetFunction
    succeeds and a launch of cg_test_fill outside the capture writes its
    value (a module that died with an earlier context would fail there).
  options: the PTX (tests/data/kernels_sm90.ptx) is learnt the same way; then,
    with the image primed, cuModuleLoadDataEx inside a capture with
    CU_JIT_MAX_REGISTERS 32, CU_JIT_WALL_TIME and the info log buffer: on the
    real 13.0 driver the load is not served and reaches the driver (the wall
    time and the log size are written by it, the function has at most 32
    registers); on the emulated 12.2 driver it is not served either, and is
    refused (900) as an unprimed load.

Run from the repository root: python3 tests/gpu/contexts_and_options.py --build build
Prints one line per check and 'contexts_and_options: N passed, M failed';
exit 0 when all passed, 1 otherwise, 77 without a GPU (or not sm_90)."""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CUBIN = os.path.join(HERE, "..", "data", "kernels_sm90.cubin")
PTX = os.path.join(HERE, "..", "data", "kernels_sm90.ptx")
P = ctypes.c_void_p
# Over tests/fakecuda (which runs no kernels), CG_FAKE_DRIVER=1 checks a module by
# cuModuleGetFunction and a launch's answer only.
FAKE = os.environ.get("CG_FAKE_DRIVER") == "1"
CU_JIT_MAX_REGISTERS, CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 0, 2, 3, 4
CU_FUNC_ATTRIBUTE_NUM_REGS = 4


# ---------------------------------------------------------------- the child
def child(how, image_path):
    cu = ctypes.CDLL("libcuda.so.1")
    with open(image_path, "rb") as f:
        image = f.read() + (b"\0" if image_path.endswith(".ptx") else b"")
    dev = ctypes.c_int()
    assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    out = {"loads": 0, "broken": 0, "dead": 0, "handles": []}

    def capture_load(ex_opts=None):
        s = P()
        assert cu.cuStreamCreate(ctypes.byref(s), 1) == 0
        m = P()
        assert cu.cuStreamBeginCapture_v2(s, 0) == 0
        if ex_opts is None:
            r = cu.cuModuleLoadData(ctypes.byref(m), image)
        else:
            opts, vals = ex_opts
            r = cu.cuModuleLoadDataEx(ctypes.byref(m), image, len(opts), opts, vals)
        g = P()
        end = cu.cuStreamEndCapture(s, ctypes.byref(g))
        out["loads"] += 1
        out.setdefault("results", []).append([r, end])
        if r or end:
            out["broken"] += 1
        if g.value:
            cu.cuGraphDestroy(g)
        fn = P()
        if r == 0:
            if cu.cuModuleGetFunction(ctypes.byref(fn), m, b"cg_test_fill") != 0:
                out["dead"] += 1
            else:  # the module runs in this context: fill 256 floats with 7.0
                y = ctypes.c_uint64()
                host = (ctypes.c_float * 256)()
                ok = cu.cuMemAlloc_v2(ctypes.byref(y), 1024) == 0
                args = [ctypes.c_uint64(y.value), ctypes.c_float(7.0), ctypes.c_int(256)]
                params = (P * 3)(*[ctypes.cast(ctypes.pointer(a), P) for a in args])
                ok = ok and cu.cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, None, params, None) == 0
                ok = ok and cu.cuMemcpyDtoH_v2(host, y, 1024) == 0 and (host[255] == 7.0 or FAKE)
                cu.cuMemFree_v2(y)
                if not ok:
                    out["dead"] += 1
        cu.cuStreamDestroy_v2(s)
        return r, fn

    def primary():
        c = P()
        assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(c), dev) == 0 and cu.cuCtxSetCurrent(c) == 0
        out["handles"].append(c.value)

    if how == "learn":
        primary()
        capture_load()
    elif how == "turn":
        for _ in range(6):
            c = P()
            r = cu.cuCtxCreate_v4(ctypes.byref(c), None, 0, dev) if hasattr(cu, "cuCtxCreate_v4") else \
                cu.cuCtxCreate_v2(ctypes.byref(c), 0, dev)
            assert r == 0, f"cuCtxCreate: {r}"
            out["handles"].append(c.value)
            capture_load()
            assert cu.cuCtxDestroy_v2(c) == 0
    elif how == "reset":
        primary()
        capture_load()
        assert cu.cuDevicePrimaryCtxReset_v2(dev) == 0
        primary()
        capture_load()
    elif how == "options":
        primary()
        info = ctypes.create_string_buffer(4096)
        opts = (ctypes.c_int * 4)(CU_JIT_MAX_REGISTERS, CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER,
                                  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
        vals = (P * 4)(P(32), None, ctypes.cast(info, P), P(4096))
        ctypes.memmove(ctypes.byref(vals, ctypes.sizeof(P)), ctypes.byref(ctypes.c_float(-1.0)), 4)
        r, fn = capture_load((opts, vals))
        wall = ctypes.c_float()
        ctypes.memmove(ctypes.byref(wall), ctypes.byref(vals, ctypes.sizeof(P)), 4)
        regs = ctypes.c_int(-1)
        if fn.value:
            cu.cuFuncGetAttribute(ctypes.byref(regs), CU_FUNC_ATTRIBUTE_NUM_REGS, fn)
        out.update(result=r, wall=wall.value, info_size=vals[3] or 0, regs=regs.value)
    print("CHILD " + json.dumps(out))
    return 0


# ---------------------------------------------------------------- the parent
class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, cond, what):
        print(("ok: " if cond else "FAIL: ") + what)
        if cond:
            self.passed += 1
        else:
            self.failed += 1


def run(shim, prime, how, image, emulate=True):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.jsonl")
        env = dict(os.environ, LD_PRELOAD=shim, CAPGUARD_MODE="guard", CAPGUARD_PRIME=prime, CAPGUARD_LOG=log)
        env.pop("CAPGUARD_EMULATE_DRIVER", None)
        if emulate:
            env["CAPGUARD_EMULATE_DRIVER"] = "12020"
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", how, image], env=env,
                           capture_output=True, text=True, timeout=60)
        line = next((l for l in p.stdout.splitlines() if l.startswith("CHILD ")), None)
        res = json.loads(line[6:]) if line else {"error": p.stderr[-600:]}
        recs = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
        res["served"] = sum(1 for r in recs if r.get("type") == "event" and r.get("verdict") == "served")
        res["verdicts"] = [r.get("verdict") for r in recs if r.get("type") == "event"
                           and str(r.get("call", "")).startswith("cuModuleLoad")]
        return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        n, major = ctypes.c_int(), ctypes.c_int()
        if cu.cuInit(0) or cu.cuDeviceGetCount(ctypes.byref(n)) or n.value < 1:
            raise OSError("no device")
        cu.cuDeviceGetAttribute(ctypes.byref(major), 75, 0)  # compute capability major
        if major.value != 9:
            print(f"SKIP: the test cubin is for sm_90 (this GPU: sm_{major.value}x)")
            return 77
    except OSError as e:
        print(f"SKIP: no CUDA driver or GPU ({e})")
        return 77
    shim = os.path.abspath(os.path.join(a.build, "shim", "libcapguard.so"))
    check = Checks()
    with tempfile.TemporaryDirectory() as tmp:
        prime = os.path.join(tmp, "cubin.cgp")
        r = run(shim, prime, "learn", CUBIN)
        check(r.get("broken") == 1 and os.path.exists(prime), f"contexts: the cubin is learnt on emulated 12.2 ({r})")
        r = run(shim, prime, "turn", CUBIN)
        check(r.get("loads") == 6 and r.get("broken") == 0 and r.get("dead") == 0 and r.get("served") == 6,
              f"contexts: 6 created and destroyed in turn, each load served a live module of its own context "
              f"(broken {r.get('broken')}, dead {r.get('dead')}, served {r.get('served')}, "
              f"{len(set(r.get('handles', [])))} distinct handles of 6)")
        r = run(shim, prime, "reset", CUBIN)
        check(r.get("loads") == 2 and r.get("broken") == 0 and r.get("dead") == 0 and r.get("served") == 2,
              f"contexts: the primary context reset between two captures, both served live modules "
              f"(broken {r.get('broken')}, dead {r.get('dead')}, served {r.get('served')}, same handle "
              f"{len(set(r.get('handles', []))) == 1})")

        prime = os.path.join(tmp, "ptx.cgp")
        r = run(shim, prime, "learn", PTX)
        check(r.get("broken") == 1 and os.path.exists(prime), f"options: the PTX is learnt on emulated 12.2 ({r})")
        r = run(shim, prime, "options", PTX, emulate=False)
        check(r.get("result") == 0 and r.get("served") == 0 and r.get("wall", -1) >= 0 and r.get("info_size") != 4096
              and 0 < r.get("regs", -1) <= 32,
              f"options, real driver: not served, the driver made it (wall {r.get('wall')} ms, info log size "
              f"{r.get('info_size')}, {r.get('regs')} registers, verdicts {r.get('verdicts')})")
        r = run(shim, prime, "options", PTX)
        check(r.get("result") == 900 and r.get("served") == 0,
              f"options, emulated 12.2: not served, refused as an unprimed load (result {r.get('result')}, "
              f"verdicts {r.get('verdicts')})")
    print(f"contexts_and_options: {check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
