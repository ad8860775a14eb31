#!/usr/bin/env python3
"""Capture time next to wall time, on the GPU: the vLLM-like multi-size
start-up (tests/gpu/triton_startup.py: a warm-up, ten torch.cuda.graph
captures with Triton kernels compiled and loaded during capture, every graph
replayed) run whole, as a process, in three ways that alternate:
  plain    without capguard;
  guard    capguard in guard mode with a log: its summary says how many
           graphs were captured, the seconds inside them, the slowest and
           where it began, and the time from the first begin to the first
           replay (the accounting is always on: its cost is in guard's
           wall time);
  metrics  the same with CAPGUARD_METRICS=DIR: the textfile written at exit
           and at most once a second while captures happen.
A first run without capguard fills Triton's cache and one in guard mode the
priming file (which the metrics runs share), so that no timed run compiles. Prints one line a run, then the medians: wall time, the
capture time the summary accounted (and its share of the wall), the first
replay, and guard's and metrics' cost over plain; and the metrics file's
capture seconds, which must equal the log's.

Usage (repo root, build folder 'build'):
  python3 tests/gpu/fleet_startup.py [--build build] [--rounds 2]
Eight runs of the start-up at 2 rounds: within 60 s on an H100. Exit 77 (skipped) without a GPU, torch or
Triton; 1 when a figure is missing or the file disagrees with the log; 2 when
a run fails."""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_here  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STARTUP = os.path.join(HERE, "triton_startup.py")


def skip_reason():
    return gpu_here.skip_reason()


def run(env):
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, STARTUP], env=env, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    if p.returncode != 0 or "replay=correct" not in p.stdout:
        print("fleet_startup: a run failed (%d):\n%s%s" % (p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
        sys.exit(2)
    return wall


def summary_of(log):
    """The last summary record of the log (this run's process)."""
    s = None
    for line in open(log):
        if '"type":"summary"' in line:
            s = json.loads(line)
    return s


def metrics_seconds(d, pid):
    """capguard_capture_seconds_total in the process's file."""
    for f in glob.glob(os.path.join(d, "capguard_*_%d.prom" % pid)):
        for line in open(f):
            m = re.match(r"capguard_capture_seconds_total\{.*\} (\S+)$", line)
            if m:
                return float(m.group(1))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    why = skip_reason()
    if why:
        print("SKIP: " + why)
        return 77
    shim = os.path.abspath(os.path.join(args.build, "shim", "libcapguard.so"))
    if not os.path.exists(shim):
        print("fleet_startup: no %s: build first (meson setup build && ninja -C build)" % shim)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        plain = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
        plain.pop("LD_PRELOAD", None)
        mdir = os.path.join(tmp, "metrics")
        os.mkdir(mdir)
        log = os.path.join(tmp, "log.jsonl")
        guard = dict(plain, LD_PRELOAD=shim, CAPGUARD_MODE="guard", CAPGUARD_PRIME=os.path.join(tmp, "prime"),
                     CAPGUARD_LOG=log, CAPGUARD_QUIET="1", CAPGUARD_SUMMARY="0")
        metrics = dict(guard, CAPGUARD_METRICS=mdir)
        ways = {"plain": plain, "guard": guard, "metrics": metrics}
        run(plain)  # Triton's cache, untimed
        run(guard)  # the priming file, untimed
        walls = {w: [] for w in ways}
        cap, first, bad = [], [], 0
        for r in range(args.rounds):
            order = list(ways) if r % 2 == 0 else list(ways)[::-1]
            for w in order:
                wall = run(ways[w])
                walls[w].append(wall)
                line = "run %d %-7s wall %6.3f s" % (r + 1, w, wall)
                if w != "plain":
                    s = summary_of(log)
                    if not s or "capture_ns" not in s:
                        print(line + ": no capture time in the log's summary")
                        return 1
                    secs = s["capture_ns"] / 1e9
                    replay = (s.get("first_replay_ns", 0) - s.get("first_capture_ns", 0)) / 1e9
                    cap.append(secs)
                    first.append(replay)
                    slow = (s.get("slowest") or [{}])[0]
                    line += ": %d graphs in %.3f s (%.1f%% of the wall), first replay %.3f s after the first " \
                            "begin, slowest %.1f ms at %s" % (s["captures_timed"] - s["captures_broken"], secs,
                                                             100 * secs / wall, replay, slow.get("ns", 0) / 1e6,
                                                             slow.get("began", "?"))
                    if w == "metrics":
                        got = metrics_seconds(mdir, s["pid"])
                        ok = got is not None and abs(got - secs) < 1e-9
                        bad += not ok
                        line += "; metrics file %s" % ("%.9f s: same" % got if ok else "DIFFERS: %r" % got)
                print(line, flush=True)
        med = {w: statistics.median(v) for w, v in walls.items()}
        print("median wall: plain %.3f s, guard %.3f s (%+.1f%%), metrics %.3f s (%+.1f%% over plain, %+.1f%% over guard)"
              % (med["plain"], med["guard"], 100 * (med["guard"] / med["plain"] - 1), med["metrics"],
                 100 * (med["metrics"] / med["plain"] - 1), 100 * (med["metrics"] / med["guard"] - 1)))
        print("median capture time %.3f s of %.3f s wall (%.1f%%); first replay %.3f s after the first begin"
              % (statistics.median(cap), med["guard"], 100 * statistics.median(cap) / med["guard"],
                 statistics.median(first)))
        print("RESULT fleet_startup %s" % ("ok" if not bad else "metrics file disagrees with the log"))
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
