#!/usr/bin/env bash
# Many threads capturing at once (bench_threads.c), A/B in one run: for one
# thread and for THREADS threads, processes without and with capguard (guard
# mode, no log) alternate ROUNDS times; per variant the median ns a capture
# and context switches a capture, then what capguard adds a capture alone and
# at THREADS threads, and their ratio (goal: at most 1.5x), with the A/A of the
# runs without capguard (even rounds against odd).
# Usage: bench/run_bench_threads.sh BUILDDIR [THREADS [ITERATIONS [ROUNDS [MODE]]]]
# Over the fake driver unless LD_LIBRARY_PATH finds another libcuda.so.1
# (--real: the system's driver).
set -euo pipefail
real=0
if [ "${1:-}" = "--real" ]; then real=1; shift; fi
build=${1:-build}
threads=${2:-64}
iters=${3:-2000}
rounds=${4:-5}
mode=${5:-0}
bench=$build/bench/bench_threads
shim=$(cd "$build/shim" && pwd)/libcapguard.so
[ -x "$bench" ] || { echo "run_bench_threads: $bench not built" >&2; exit 2; }
if [ $real = 0 ]; then export LD_LIBRARY_PATH=$(cd "$build/tests/fakecuda" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
  for t in 1 "$threads"; do
    "$bench" "$t" "$iters" "$mode" >>"$tmp/none.$t" || exit 2
    env LD_PRELOAD="$shim" CAPGUARD_MODE=guard CAPGUARD_QUIET=1 CAPGUARD_SUMMARY=0 CAPGUARD_PRIME="$tmp/p.cgp" \
      "$bench" "$t" "$iters" "$mode" >>"$tmp/guard.$t" 2>/dev/null || exit 2
  done
done
python3 - "$tmp" "$threads" <<'PY'
import statistics, sys
tmp, threads = sys.argv[1], sys.argv[2]
def rows(name):
    return [tuple(float(x) for x in l.split()[1::2]) for l in open("%s/%s" % (tmp, name))]
med = {}
for v in ("none", "guard"):
    for t in ("1", threads):
        r = rows("%s.%s" % (v, t))
        med[v, t] = (statistics.median(x[0] for x in r), statistics.median(x[1] for x in r))
        print("%-6s %4s threads: %8.0f ns a capture, %.3f context switches a capture" % (v, t, *med[v, t]))
for t in ("1", threads):
    r = rows("none.%s" % t)
    if len(r) < 2:
        print("A/A: needs 2 rounds or more")
        break
    aa = statistics.median(x[0] for x in r[0::2]) - statistics.median(x[0] for x in r[1::2])
    print("A/A (without, even rounds - odd) %4s threads: %+.0f ns" % (t, aa))
one = med["guard", "1"][0] - med["none", "1"][0]
many = med["guard", threads][0] - med["none", threads][0]
print("capguard adds %.0f ns a capture alone, %.0f ns at %s threads: %.2fx (goal <= 1.5x: %s)"
      % (one, many, threads, many / one if one > 0 else float("inf"), "yes" if one > 0 and many <= 1.5 * one else "no"))
PY
