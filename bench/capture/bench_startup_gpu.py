#!/usr/bin/env python3
"""A primed multi-size Triton start-up (tests/gpu/triton_startup.py: ten
sizes captured, kernels compiled and loaded during capture) with and without
capguard, by wall time, in alternating runs. Goal: within noise of
the run without capguard.

First one run without capguard (fills Triton's cache, so no run after it
compiles) and one with capguard in guard mode (writes the priming file);
then ROUNDS pairs, alternating which goes first, each a whole process. A
run that fails stops the benchmark.

Usage: bench_startup_gpu.py SHIM [--rounds R] [--stale]
(--stale: the capguard runs with CAPGUARD_STALE=1, the stale-pointer check)
Exit 77 (skipped) without a GPU, torch or Triton; 2 when a run fails."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu"))
import gpu_here  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STARTUP = os.path.join(HERE, "..", "..", "tests", "gpu", "triton_startup.py")


def skip_reason():
    return gpu_here.skip_reason()


def run(env):
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, STARTUP], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit("bench_startup_gpu: a run failed (%d):\n%s%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shim")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stale", action="store_true", help="the capguard runs with CAPGUARD_STALE=1 (docs/stale.md)")
    args = ap.parse_args()
    why = skip_reason()
    if why:
        print("SKIP: " + why)
        return 77
    shim = os.path.abspath(args.shim)
    with tempfile.TemporaryDirectory() as tmp:
        plain = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
        plain.pop("LD_PRELOAD", None)
        guarded = dict(plain, LD_PRELOAD=shim, CAPGUARD_MODE="guard", CAPGUARD_PRIME=os.path.join(tmp, "prime"))
        if args.stale:
            guarded["CAPGUARD_STALE"] = "1"
        run(plain)
        run(guarded)
        if not os.path.exists(guarded["CAPGUARD_PRIME"]):
            print("bench_startup_gpu: the guard run wrote no priming file", file=sys.stderr)
            return 2
        walls = {"none": [], "guard": []}
        for r in range(args.rounds):
            order = [("none", plain), ("guard", guarded)]
            for name, env in (order if r % 2 == 0 else order[::-1]):
                walls[name].append(run(env))
    print("# tests/gpu/triton_startup.py, whole process wall time, %d runs each, alternating, primed" % args.rounds)
    for name in ("none", "guard"):
        w = walls[name]
        print("%-6s median %.3f s  min %.3f  max %.3f   %s" % (name, statistics.median(w), min(w), max(w),
                                                             " ".join("%.3f" % x for x in w)))
    d = statistics.median(walls["guard"]) - statistics.median(walls["none"])
    spread = max(walls["none"]) - min(walls["none"])
    print("guard - none: %+.3f s (the runs without capguard spread over %.3f s)" % (d, spread))
    if len(walls["none"]) > 1:
        even, odd = walls["none"][0::2], walls["none"][1::2]
        print("A/A (no capguard, even rounds - odd rounds): %+.3f s" % (statistics.median(even) - statistics.median(odd)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
