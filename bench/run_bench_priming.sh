#!/usr/bin/env bash
# Priming's costs (see bench_priming.c), medians over RUNS processes each:
#   driver      no capguard: the driver's own mid-capture load
#   report      capguard report mode: load + inspection + report
#   record      guard mode, empty priming file: load + report + recording
#   primed      guard mode, primed with the image: preload at the first begin, load served
# Usage: bench/run_bench_priming.sh BUILDDIR [RUNS]  (real driver, or the fake via LD_LIBRARY_PATH)
set -euo pipefail
build=${1:-build}
runs=${2:-15}
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$build/bench/bench_priming
img=$root/tests/data/kernels_sm90.cubin
shim=$build/shim/libcapguard.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() { # config env... -> "config begin_first load_mid begin_next load_plain"
  local name=$1; shift
  for _ in $(seq "$runs"); do env "$@" "$bench" "$img" 2>/dev/null; done >"$tmp/$name.out"
  printf '%-8s' "$name"
  for k in begin_first load_mid begin_next load_plain; do
    printf ' %12s' "$(awk -v k=$k '$1==k {print $2}' "$tmp/$name.out" | median)"
  done
  echo
}
printf '%-8s %12s %12s %12s %12s   (ns, median of %s runs)\n' config begin_first load_mid begin_next load_plain "$runs"
measure driver CAPGUARD_MODE=off
measure report LD_PRELOAD=$shim CAPGUARD_MODE=report CAPGUARD_QUIET=1
# Recording: a fresh priming file every run, so each run appends the image.
for i in $(seq "$runs"); do
  CAPGUARD_PRIME=$tmp/rec$i.cgp LD_PRELOAD=$shim CAPGUARD_MODE=guard CAPGUARD_QUIET=1 "$bench" "$img" 2>/dev/null
done >"$tmp/record.out"
printf '%-8s' record
for k in begin_first load_mid begin_next load_plain; do
  printf ' %12s' "$(awk -v k=$k '$1==k {print $2}' "$tmp/record.out" | median)"
done
echo
cp "$tmp/rec1.cgp" "$tmp/primed.cgp"
measure primed CAPGUARD_PRIME=$tmp/primed.cgp LD_PRELOAD=$shim CAPGUARD_MODE=guard CAPGUARD_QUIET=1
