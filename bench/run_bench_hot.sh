#!/usr/bin/env bash
# The hot path with nothing capturing: capguard's cuEventRecord, cuEventQuery,
# cuStreamQuery, cuLaunchKernel and cuLaunchKernelEx against the driver's own,
# measured in one process, interleaved round by round (bench_hot_calls.c). The shim is
# dlopen'ed by the program, never preloaded. Goal: at most 2 ns more per call,
# 1 ns for the launches (launches are the hottest calls a program makes).
# Exit 1 when a call misses it, 2 when the benchmark cannot run (e.g. no such
# wrapper). On a GPU (--real) the launches queue real (empty) kernels: give
# fewer iterations, e.g. --real build 20000 21.
# Usage: bench/run_bench_hot.sh [--real|--null] BUILDDIR [ITERATIONS [ROUNDS]]
#   default: over the fake driver (BUILDDIR/tests/fakecuda; its calls take a
#            mutex, ~20-90 ns, and their noise is of the order of the goal);
#   --null:  over a driver whose calls do nothing (BUILDDIR/bench/nulldrv):
#            the wrapper's own cost;
#   --real:  over the libcuda.so.1 the loader finds (a GPU machine).
set -euo pipefail
driver=fake
case "${1:-}" in
--real) driver=real; shift ;;
--null) driver=null; shift ;;
esac
build=${1:-build}
iters=${2:-200000}
rounds=${3:-21}
build=$(cd "$build" && pwd)
bench=$build/bench/bench_hot_calls
shim=$build/shim/libcapguard.so
unset LD_PRELOAD CAPGUARD_LOG
# guard mode (the default) and nothing else: no priming file, no log, no summary line
export CAPGUARD_MODE=guard CAPGUARD_PRIME=/dev/null/none CAPGUARD_QUIET=1 CAPGUARD_SUMMARY=0
case $driver in
fake)
  export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "# driver: the fake (its entry points take a global mutex)" ;;
null)
  export LD_LIBRARY_PATH=$build/bench/nulldrv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "# driver: the null driver (calls that do nothing: the wrapper's own cost)" ;;
real)
  echo "# driver: the real libcuda.so.1" ;;
esac
set +e
out=$("$bench" "$shim" "$iters" "$rounds")
rc=$?
set -e
if [ "$rc" != 0 ]; then
  [ -z "$out" ] || echo "$out"
  exit "$rc"
fi
echo "$out"
echo "$out" | awk '!/^#/ && $1 ~ /^cu/ {
  goal = $1 ~ /^cuLaunchKernel/ ? 1.0 : 2.0
  printf "%-16s difference %.2f ns (%.3fx) <= %g ns: %s   (A/A, the driver against itself: %.2f ns)\n", $1, $4, $6, goal, ($4 <= goal ? "yes" : "no"), $5
  if ($4 > goal) bad = 1
} END { exit bad }'
