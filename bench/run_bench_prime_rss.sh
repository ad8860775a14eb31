#!/usr/bin/env bash
# Resident memory a large priming file costs each process (bench_prime_rss.c):
# one capture begun under capguard with a priming file holding one MB-megabyte
# image, (a) without capguard, (b) the image not for this device (not
# preloaded), (c) preloaded (the driver keeps its own copy of the module).
# Usage: bench/run_bench_prime_rss.sh BUILDDIR [MB]   (the fake driver via
# LD_LIBRARY_PATH, or a real one; FAKECUDA_SM=75 stands for another arch there)
set -euo pipefail
build=${1:-build}
mb=${2:-200}
bench=$build/bench/bench_prime_rss
shim=$(cd "$build/shim" && pwd)/libcapguard.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bench" write "$tmp/big.cgp" "$mb"
echo "priming file: $(du -m "$tmp/big.cgp" | cut -f1) MB, one PTX image for sm_80"
export CAPGUARD_PRIME=$tmp/big.cgp CAPGUARD_QUIET=1 CAPGUARD_SUMMARY=0
row() { # name env...
  local name=$1; shift
  env "$@" "$bench" begin >"$tmp/out" 2>/dev/null
  printf '%-34s %10s %10s %10s\n' "$name" "$(awk '$1=="VmHWM" {print $2}' "$tmp/out")" \
    "$(awk '$1=="RssAnon" {print $2}' "$tmp/out")" "$(awk '$1=="RssFile" {print $2}' "$tmp/out")"
}
printf '%-34s %10s %10s %10s   (kB, after the first capture)\n' run VmHWM RssAnon RssFile
row "without capguard" CAPGUARD_MODE=off
row "capguard, image not for this GPU" LD_PRELOAD="$shim" CAPGUARD_MODE=guard FAKECUDA_SM=75
row "capguard, image preloaded" LD_PRELOAD="$shim" CAPGUARD_MODE=guard
