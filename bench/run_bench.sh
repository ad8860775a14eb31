#!/usr/bin/env bash
# Per-call cost with and without capguard, over whatever libcuda.so.1 the
# loader finds (the fake driver: LD_LIBRARY_PATH=build/tests/fakecuda; the
# real one on a GPU machine). Usage: bench/run_bench.sh BUILDDIR [ITERATIONS]
set -euo pipefail
build=${1:-build}
iters=${2:-200000}
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$build/bench/bench_calls
cubin=$root/tests/data/kernels_sm90.cubin
without=$("$bench" "$cubin" "$iters")
with=$(CAPGUARD_MODE=guard CAPGUARD_PRIME=/dev/null/none LD_PRELOAD=$build/shim/libcapguard.so "$bench" "$cubin" "$iters" 2>/dev/null)
printf '%-12s %14s %14s %7s  %s\n' call "ns without" "ns with" ratio "pointer with capguard"
join <(echo "$without" | sort) <(echo "$with" | sort) |
  awk '{printf "%-12s %14.1f %14.1f %6.2fx  %s\n", $1, $2, $4, $4/$2, $5}'
