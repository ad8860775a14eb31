#!/usr/bin/env python3
"""What an empty torch.cuda.graph capture costs under capguard on a real GPU.
Goal: at most 1.05x the capture's time without capguard, in guard
mode with no log.

Each variant runs in its own process; the variants alternate, ROUNDS
processes each. A process makes WARM captures, then times CAPTURES empty
captures one by one (`with torch.cuda.graph(g): pass`, __enter__'s
synchronize, gc.collect and empty_cache included, as a serving engine pays
them), then as many of the capture alone (capture_begin + capture_end on a
side stream), DEPTH Python frames deeper than its main function, and prints
the medians; a variant's figure is the median of its processes'. The goal
is checked on the first. One variant's per-process medians spread 70-140 us
on the H100's host, in two groups, with and without capguard: the default is
9 rounds, and the A/A line compares the even rounds' processes without
capguard against the odd rounds' (the ratio's noise floor). --cpu N pins every
process to one CPU (pinned to CPU 15 the groups stayed: 72-116 us).

Usage: bench_capture_gpu.py SHIM [--captures N] [--rounds R] [--depth D]
                            [--variants none,guard,guard+log,report,off] [--goal 1.05]
Exit 77 (skipped) when there is no GPU or torch, 1 when guard mode with no
log misses the goal, 2 when the benchmark cannot run."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from alternating import aa_ratio, pinner  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu"))
import gpu_here  # noqa: E402


def child(args):
    import torch
    torch.cuda.init()
    # This thread on one CPU for the whole run (torch's own threads stay
    # where they are): a migration in the middle of a run is noise.
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    stream = torch.cuda.Stream()
    kept = []

    def captures(n, out):
        for _ in range(n):
            g = torch.cuda.CUDAGraph()
            t0 = time.perf_counter_ns()
            with torch.cuda.graph(g, stream=stream):
                pass
            out.append(time.perf_counter_ns() - t0)
            kept.append(g)  # destroyed after the timing, not inside it

    def direct(n, out):
        # The capture alone: begin and end, without __enter__'s
        # synchronize, gc.collect and empty_cache.
        with torch.cuda.stream(stream):
            for _ in range(n):
                g = torch.cuda.CUDAGraph()
                t0 = time.perf_counter_ns()
                g.capture_begin()
                g.capture_end()
                out.append(time.perf_counter_ns() - t0)
                kept.append(g)

    def deeper(d, fn, n, out):
        if d > 0:
            return deeper(d - 1, fn, n, out)
        return fn(n, out)

    deeper(args.depth, captures, args.warm, [])
    deeper(args.depth, direct, args.warm, [])
    times, alone = [], []
    deeper(args.depth, captures, args.captures, times)
    deeper(args.depth, direct, args.captures, alone)
    print("median_ns %d direct_ns %d" % (statistics.median(times), statistics.median(alone)))


VARIANTS = {
    "none": None,
    "guard": {"CAPGUARD_MODE": "guard"},
    "guard+log": {"CAPGUARD_MODE": "guard", "CAPGUARD_LOG": "{tmp}/log-{run}.jsonl"},
    "report": {"CAPGUARD_MODE": "report", "CAPGUARD_LOG": "{tmp}/log-{run}.jsonl"},
    "off": {"CAPGUARD_MODE": "off"},
}


def skip_reason():
    return gpu_here.skip_reason(triton=False)


def parent(args):
    why = skip_reason()
    if why:
        print("SKIP: " + why)
        return 77
    shim = os.path.abspath(args.shim)
    if not os.path.exists(shim):
        print("bench_capture_gpu: %s is missing" % shim, file=sys.stderr)
        return 2
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            print("bench_capture_gpu: unknown variant %r (known: %s)" % (v, ", ".join(VARIANTS)), file=sys.stderr)
            return 2
    figures = {v: [] for v in variants}
    direct = {v: [] for v in variants}
    pin, pinned = pinner(args.cpu, "bench_capture_gpu")
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for v in (variants if r % 2 == 0 else variants[::-1]):
                env = {k: val for k, val in os.environ.items() if not k.startswith("CAPGUARD_")}
                env.pop("LD_PRELOAD", None)
                if VARIANTS[v] is not None:
                    env["LD_PRELOAD"] = shim
                    env["CAPGUARD_PRIME"] = os.path.join(tmp, "prime")
                    for k, val in VARIANTS[v].items():
                        env[k] = val.format(tmp=tmp, run="%s-%d" % (v, r))
                p = subprocess.run([sys.executable, os.path.abspath(__file__), shim, "--child",
                                    "--captures", str(args.captures), "--warm", str(args.warm),
                                    "--depth", str(args.depth)],
                                   env=env, capture_output=True, text=True, timeout=600, preexec_fn=pin)
                if p.returncode != 0 or not p.stdout.startswith("median_ns"):
                    print("bench_capture_gpu: variant %s failed (%d):\n%s%s" % (v, p.returncode, p.stdout, p.stderr),
                          file=sys.stderr)
                    return 2
                words = p.stdout.split()
                figures[v].append(int(words[1]))
                direct[v].append(int(words[3]))
    import torch
    print("# empty torch.cuda.graph captures: %d a process after %d warm, %d processes a variant, alternating, "
          "%d Python frames deeper, %s; torch %s, %s" % (args.captures, args.warm, args.rounds, args.depth,
                                                     pinned,
                                                     torch.__version__, torch.cuda.get_device_name(0)))
    for title, table in (("torch.cuda.graph (the goal)", figures), ("capture_begin + capture_end alone", direct)):
        print("## " + title)
        print("%-10s %10s %8s   %s" % ("variant", "median us", "ratio", "each process's median (us)"))
        base = statistics.median(table["none"]) if "none" in table else None
        for v in variants:
            m = statistics.median(table[v])
            ratio = "%.3fx" % (m / base) if base else "-"
            print("%-10s %10.1f %8s   %s" % (v, m / 1000, ratio, " ".join("%.1f" % (x / 1000) for x in table[v])))
    base = statistics.median(figures["none"]) if "none" in figures else None
    aa = aa_ratio(figures["none"]) if base else None
    if aa is not None:
        print("A/A (no capguard, even rounds / odd rounds): %.3fx" % aa)
    if not base or "guard" not in figures:
        return 0
    ratio = statistics.median(figures["guard"]) / base
    ok = ratio <= args.goal
    print("guard mode, no log: %.3fx the capture without capguard <= %.2fx: %s" % (ratio, args.goal, "yes" if ok else "no"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shim")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--captures", type=int, default=200)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--variants", default="none,guard,guard+log,report,off")
    ap.add_argument("--goal", type=float, default=1.05)
    ap.add_argument("--cpu", type=int, default=None, help="pin every process to this CPU (default: not pinned)")
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
