#!/usr/bin/env bash
# Priming at scale (see bench_preload.c): preloading N distinct recorded images
# before the first capture, as a ratio to the driver's own load of the same
# images in the same process (goal: at most 1.1x), and serving a load during
# capture, with and without the report. Medians over RUNS processes.
# Usage: bench/run_bench_preload.sh BUILDDIR [RUNS] [--cubin]
#   (real driver, or the fake via LD_LIBRARY_PATH; --cubin compiles each image
#   to a cubin with the driver's linker first, where it has one)
set -euo pipefail
build=${1:-build}
runs=${2:-5}
cubin=${3:-}
bench=$build/bench/bench_preload
shim=$(cd "$build/shim" && pwd)/libcapguard.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The driver's JIT cache would make the second load of the same PTX cheaper.
export CUDA_CACHE_DISABLE=1 CAPGUARD_MODE=guard CAPGUARD_QUIET=1 CAPGUARD_SUMMARY=0
unset CAPGUARD_LOG
printf '%-6s %-6s %8s %14s %14s %14s %7s %7s   (median of %s processes)\n' images kind bytes driver_ns preload_ns \
  driver_after_ns ratio ratio_after "$runs"
for n in 1 100 1000; do
  for i in $(seq "$runs"); do
    rm -f "$tmp/p.cgp"
    CAPGUARD_PRIME=$tmp/p.cgp LD_PRELOAD=$shim "$bench" preload "$n" $cubin
  done >"$tmp/pre$n.out"
  get() { awk -v k="$1" '$1==k {print $2}' "$tmp/pre$n.out" | median; }
  printf '%-6s %-6s %8s %14s %14s %14s %7s %7s\n' "$n" "$(awk '$1=="kind" {print $2; exit}' "$tmp/pre$n.out")" \
    "$(get image_bytes)" "$(get driver_loads_ns)" "$(get preload_ns)" "$(get driver_after_ns)" "$(get ratio)" \
    "$(get ratio_after)"
done
echo
printf '%-28s %12s   (ns per load during capture, median)\n' what ns
for log in none file; do
  for i in $(seq "$runs"); do
    rm -f "$tmp/s.cgp" "$tmp/s.jsonl"
    if [ $log = file ]; then export CAPGUARD_LOG=$tmp/s.jsonl; else unset CAPGUARD_LOG; fi
    CAPGUARD_PRIME=$tmp/s.cgp LD_PRELOAD=$shim "$bench" serve 64
  done >"$tmp/serve-$log.out"
  get() { awk -v k="$1" '$1==k {print $2}' "$tmp/serve-$log.out" | median; }
  printf '%-28s %12s\n' "served, log=$log" "$(get serve_total_ns)" \
    "  decision (inspect+lookup)" "$(get serve_decision_ns)" "  report (the rest)" "$(get report_ns)"
done
unset CAPGUARD_LOG
