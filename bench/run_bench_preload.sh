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
export CUDA_CACHE_DISABLE=1 CAPGUARD_QUIET=1 CAPGUARD_SUMMARY=0
unset CAPGUARD_LOG
# preload_ns is the first capture begin less a later one, under capguard;
# the same difference without capguard (mode off: nothing is preloaded) is
# the driver's own first-capture cost, subtracted from it.
printf '%-6s %-6s %8s %14s %14s %14s %14s %7s   (median of %s processes)\n' images kind bytes driver_ns \
  first_begin_off first_begin_on preload_ns ratio "$runs"
for n in 1 100 1000; do
  for mode in off guard; do
    for i in $(seq "$runs"); do
      rm -f "$tmp/p.cgp"
      CAPGUARD_MODE=$mode CAPGUARD_PRIME=$tmp/p.cgp LD_PRELOAD=$shim "$bench" preload "$n" $cubin
    done >"$tmp/pre$n-$mode.out"
  done
  get() { awk -v k="$1" '$1==k {print $2}' "$tmp/pre$n-$2.out" | median; }
  off=$(get preload_ns off) on=$(get preload_ns guard) drv=$(get driver_loads_ns guard)
  printf '%-6s %-6s %8s %14s %14s %14s %14s %7s\n' "$n" "$(awk '$1=="kind" {print $2; exit}' "$tmp/pre$n-guard.out")" \
    "$(get image_bytes guard)" "$drv" "$off" "$on" "$((on - off))" "$(awk -v a=$((on - off)) -v b="$drv" 'BEGIN {printf "%.3f", a / b}')"
done
echo
printf '%-28s %12s   (ns per load during capture, median)\n' what ns
for log in none file; do
  for i in $(seq "$runs"); do
    rm -f "$tmp/s.cgp" "$tmp/s.jsonl"
    if [ $log = file ]; then export CAPGUARD_LOG=$tmp/s.jsonl; else unset CAPGUARD_LOG; fi
    CAPGUARD_MODE=guard CAPGUARD_PRIME=$tmp/s.cgp LD_PRELOAD=$shim "$bench" serve 64
  done >"$tmp/serve-$log.out"
  get() { awk -v k="$1" '$1==k {print $2}' "$tmp/serve-$log.out" | median; }
  printf '%-28s %12s\n' "served, log=$log" "$(get serve_total_ns)" \
    "  decision (inspect+lookup)" "$(get serve_decision_ns)" "  report (the rest)" "$(get report_ns)"
done
unset CAPGUARD_LOG
