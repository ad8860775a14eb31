#!/usr/bin/env bash
# Many threads capturing at once (bench_threads.c), A/B in one run: for one
# thread and for each count of THREADS, processes without capguard, with it
# (guard mode, no log) and, with --old, with another build of it (main's, for
# a before/after) alternate ROUNDS times. Per variant the medians a capture
# of wall ns, voluntary context switches and CPU ns (user and system: a
# loaded machine stretches it less than the wall time); then what each
# capguard adds a capture alone and at each count, their ratio (goal at 64
# threads: what it adds to the wall time at most 1.5x what it adds alone),
# with the A/A of the runs without capguard (even rounds against odd).
# Usage: bench/run_bench_threads.sh [--real | --null] [--old SHIM] BUILDDIR
#          [THREADS [ITERATIONS [ROUNDS [MODE]]]]
#   THREADS: counts, comma-separated (default 64,1000,2000); one thread is
#     always run. ITERATIONS: captures a thread up to 64 threads (default
#     2000; one thread alone makes 50 times as many); above 64 threads each
#     makes MANY_ITERATIONS (environment, default 16; 200 with --null).
#     ROUNDS default 5.
#   Over the fake driver (BUILDDIR/tests/fakecuda), whose calls all take one
#     process-wide mutex and walk every open capture (and its ends every
#     stream); --null: over the null driver with captures
#     (BUILDDIR/tests/fakecuda/nullcap: nothing shared between threads, so
#     what is left is capguard's own); --real: the system's driver.
# Needs only BUILDDIR/shim, BUILDDIR/tests/fakecuda and
# BUILDDIR/bench/bench_threads.
set -euo pipefail
driver=fake old=
while [ $# -gt 0 ]; do
  case $1 in
    --real) driver=real; shift ;;
    --null) driver=null; shift ;;
    --old) old=${2:?--old needs a path to a libcapguard.so}; shift 2 ;;
    *) break ;;
  esac
done
build=${1:-build}
threads=${2:-64,1000,2000}
iters=${3:-2000}
rounds=${4:-5}
mode=${5:-0}
many=${MANY_ITERATIONS:-}
bench=$build/bench/bench_threads
shim=$(cd "$build/shim" && pwd)/libcapguard.so
[ -x "$bench" ] || { echo "run_bench_threads: $bench not built" >&2; exit 2; }
[ -f "$shim" ] || { echo "run_bench_threads: $shim not built" >&2; exit 2; }
if [ -n "$old" ]; then
  [ -f "$old" ] || { echo "run_bench_threads: --old $old: no such file" >&2; exit 2; }
  old=$(cd "$(dirname "$old")" && pwd)/$(basename "$old")
fi
case $driver in
  fake) export LD_LIBRARY_PATH=$(cd "$build/tests/fakecuda" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
  null) export LD_LIBRARY_PATH=$(cd "$build/tests/fakecuda/nullcap" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
esac
# The fake walks every stream at each end: 16 captures a thread at 2,000
# threads already take seconds there.
[ -n "$many" ] || { [ $driver = null ] && many=200 || many=16; }
counts="1 ${threads//,/ }"
variants="none guard${old:+ old}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "bench_threads over the $driver driver: threads $counts; $rounds rounds; variants $variants"
for r in $(seq "$rounds"); do
  for t in $counts; do
    if [ "$t" = 1 ]; then n=$((iters * 50)); elif [ "$t" -le 64 ]; then n=$iters; else n=$many; fi
    for v in $variants; do
      case $v in
        none) "$bench" "$t" "$n" "$mode" >>"$tmp/none.$t" || exit 2 ;;
        *) lib=$shim; [ "$v" = old ] && lib=$old
           env LD_PRELOAD="$lib" CAPGUARD_MODE=guard CAPGUARD_QUIET=1 CAPGUARD_SUMMARY=0 CAPGUARD_PRIME="$tmp/p.$v.cgp" \
             "$bench" "$t" "$n" "$mode" >>"$tmp/$v.$t" 2>/dev/null || exit 2 ;;
      esac
    done
  done
done
python3 - "$tmp" "$counts" "$variants" <<'PY'
import statistics, sys
tmp, counts, variants = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
name = {"none": "without", "guard": "capguard", "old": "capguard (--old)"}
def rows(v, t):  # (wall ns, context switches, CPU ns) a capture, one row a run
    return [tuple(float(x) for x in l.split()[1::2]) for l in open("%s/%s.%s" % (tmp, v, t))]
med = {}
print("%8s  %s" % ("threads", "  ".join("%33s" % name[v] for v in variants)))
print("%8s  %s" % ("", "  ".join("%33s" % "wall ns / csw / CPU ns a capture" for v in variants)))
for t in counts:
    cells = []
    for v in variants:
        r = rows(v, t)
        med[v, t] = tuple(statistics.median(x[i] for x in r) for i in range(3))
        cells.append("%11.0f %9.3f %11.0f" % med[v, t])
    print("%8s  %s" % (t, "  ".join(cells)))
for t in counts:
    r = rows("none", t)
    if len(r) < 2:
        print("A/A: needs 2 rounds or more")
        break
    aa = [statistics.median(x[i] for x in r[0::2]) - statistics.median(x[i] for x in r[1::2]) for i in (0, 2)]
    print("A/A (without, even rounds - odd) %5s threads: %+.0f ns wall, %+.0f ns CPU a capture" % (t, *aa))
for v in variants[1:]:
    one = med[v, "1"][0] - med["none", "1"][0]
    one_cpu = med[v, "1"][2] - med["none", "1"][2]
    print("%s adds %.0f ns wall (%.0f ns CPU) a capture alone" % (name[v], one, one_cpu))
    for t in counts[1:]:
        add = med[v, t][0] - med["none", t][0]
        add_cpu = med[v, t][2] - med["none", t][2]
        ratio = add / one if one > 0 else float("inf")
        goal = " (goal <= 1.5x: %s)" % ("yes" if one > 0 and add <= 1.5 * one else "no") if t == "64" else ""
        print("  at %5s threads: %6.0f ns wall, %.2fx alone%s; %.0f ns CPU, %.2fx; %+.3f csw a capture" %
              (t, add, ratio, goal, add_cpu, add_cpu / one_cpu if one_cpu > 0 else float("inf"),
               med[v, t][1] - med["none", t][1]))
PY
