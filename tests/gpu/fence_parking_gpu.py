#!/usr/bin/env python3
"""The queries' fence's parked slots on a real GPU and kernel
(docs/benchmarks.md, "A begin pays `membarrier` only while a querier may be
inside a query"), under 90 s. A process (ctypes on libcuda.so.1, capguard
preloaded, guard mode) makes 200 captures (cuStreamBeginCapture_v2 in
global mode, a memset node, cuStreamEndCapture) on its main thread while
another thread:
  none   does not exist;
  idle   queried an event 5 times before the captures and then waits;
  wake   the same, and queries once more after 100 captures;
  busy   queries the event once between every two captures.
The membarrier system calls are counted by a syscall() preloaded before the
shim (build/tests/gpu/libcount_membarrier.so, tests/gpu/count_membarrier.c:
no ptrace), each mode's count less the none run's (which holds whatever else
calls membarrier through syscall()): idle at most 3
(every begin paid one before parking: 200), wake at most 6, busy 200 (each
begin must still pay). Then the median time of a
begin+end with the idle thread against none (both with capguard, the
counter preloaded too).
Usage (repo root): python3 tests/gpu/fence_parking_gpu.py [--build build]
Prints PASS/FAIL and COST lines; exits 0 when every check passed, 1
otherwise, 77 without a GPU."""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CAPTURES = 200
P = ctypes.c_void_p


def child(how, n):
    cu = ctypes.CDLL("libcuda.so.1")
    dev, ctx, s, side, ev, g = ctypes.c_int(), P(), P(), P(), P(), P()
    buf = ctypes.c_uint64()
    if (cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0) or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
            or cu.cuCtxSetCurrent(ctx) or cu.cuStreamCreate(ctypes.byref(s), 1)
            or cu.cuStreamCreate(ctypes.byref(side), 1) or cu.cuEventCreate(ctypes.byref(ev), 0)
            or cu.cuEventRecord(ev, side) or cu.cuStreamSynchronize(side)
            or cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(4096))):
        sys.exit("fence_parking_gpu: driver set-up failed")
    cu.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, P]
    asked, answered, polls = [5], [0], []
    cv = threading.Condition()

    def helper():
        cu.cuCtxSetCurrent(ctx)
        for _ in range(5):
            polls.append(cu.cuEventQuery(ev))
        with cv:
            answered[0] = 5
            cv.notify_all()
            while True:
                cv.wait_for(lambda: asked[0] > answered[0] or asked[0] < 0)
                if asked[0] < 0:
                    return
                polls.append(cu.cuEventQuery(ev))
                answered[0] = asked[0]
                cv.notify_all()

    def ask():
        with cv:
            asked[0] += 1
            cv.notify_all()
            cv.wait_for(lambda: answered[0] == asked[0])

    t = None
    if how != "none":
        t = threading.Thread(target=helper)
        t.start()
        with cv:
            cv.wait_for(lambda: answered[0] == 5)
    times, failed = [], 0
    for i in range(n):
        if (how == "busy" and i > 0) or (how == "wake" and i == n // 2):
            ask()
        t0 = time.perf_counter_ns()
        r = cu.cuStreamBeginCapture_v2(s, 0)
        r = r or cu.cuMemsetD8Async(buf.value, 1, 4096, s)
        r = r or cu.cuStreamEndCapture(s, ctypes.byref(g))
        times.append(time.perf_counter_ns() - t0)
        if r or not g:
            failed += 1
        if g:
            cu.cuGraphDestroy(g)
            g.value = None
    if t:
        with cv:
            asked[0] = -1
            cv.notify_all()
        t.join()
    print("RESULT failed=%d polls=%d polls_ok=%d median_ns=%d" % (
        failed, len(polls), sum(1 for p in polls if p == 0), statistics.median(times[10:])), flush=True)


def skip_reason():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        n = ctypes.c_int()
        if cu.cuInit(0) or cu.cuDeviceGetCount(ctypes.byref(n)) or n.value < 1:
            return "no CUDA device"
    except OSError as e:
        return "no CUDA driver (%s)" % e
    return None


def run(preload, how, tmp):
    out = os.path.join(tmp, "membarriers." + how)
    env = dict(os.environ, CAPGUARD_MODE="guard", CAPGUARD_QUIET="1", LD_PRELOAD=preload,
               CAPGUARD_PRIME=os.path.join(tmp, "prime.cgp"), CG_COUNT_MEMBARRIER=out)
    env.pop("CAPGUARD_LOG", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", how, str(CAPTURES)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    res = {}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            res = dict(kv.split("=", 1) for kv in line.split()[1:])
    if p.returncode != 0 or not res:
        print("FAIL %s: exit %d: %s" % (how, p.returncode, p.stderr.strip()[-2000:]), flush=True)
        return None
    res = {k: int(v) for k, v in res.items()}
    with open(out) as f:
        res["membarriers"] = int(f.read())
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    why = skip_reason()
    if why:
        print("SKIP fence_parking_gpu: " + why)
        return 77
    shim = os.path.abspath(os.path.join(args.build, "shim", "libcapguard.so"))
    counter = os.path.abspath(os.path.join(args.build, "tests", "gpu", "libcount_membarrier.so"))
    for f in (shim, counter):
        if not os.path.exists(f):
            print("FAIL %s not built" % f)
            return 1
    preload = counter + ":" + shim  # the counter's syscall() first
    ok = True

    def check(name, cond, detail):
        nonlocal ok
        ok &= bool(cond)
        print("%s %s: %s" % ("PASS" if cond else "FAIL", name, detail), flush=True)

    with tempfile.TemporaryDirectory(prefix="capguard-fence-") as tmp:
        counted = {how: run(preload, how, tmp) for how in ("none", "idle", "wake", "busy")}
        if not all(counted.values()):
            return 1
        base = counted["none"]["membarriers"]
        extra = {how: counted[how]["membarriers"] - base for how in counted}
        for how, r in counted.items():
            check(how + " captures", r["failed"] == 0 and r["polls"] == r["polls_ok"],
                  "%d of %d captures failed, %d of %d queries answered CUDA_SUCCESS"
                  % (r["failed"], CAPTURES, r["polls_ok"], r["polls"]))
        check("idle querier", extra["idle"] <= 3,
              "%d membarriers for %d captures (%d with no other thread)" % (extra["idle"], CAPTURES, base))
        check("querier woken once", 1 <= extra["wake"] - extra["idle"] and extra["wake"] <= 6,
              "%d membarriers for %d captures" % (extra["wake"], CAPTURES))
        check("querier between every two begins", extra["busy"] >= CAPTURES,
              "%d membarriers for %d captures: every begin pays" % (extra["busy"], CAPTURES))
        timed = {how: run(preload, how, tmp) for how in ("none", "idle")}
        if all(timed.values()):
            print("COST begin+end median: %.1f us with an idle querier, %.1f us with no other thread (capguard, guard mode)"
                  % (timed["idle"]["median_ns"] / 1000, timed["none"]["median_ns"] / 1000), flush=True)
        else:
            ok = False
    print("fence_parking_gpu: %s" % ("every check passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
