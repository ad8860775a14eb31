#!/usr/bin/env bash
# The stale-pointer check's cost in instructions (callgrind), over the fake
# driver: bench_stale's engine-shaped start-up (CAPTURES graphs of KERNELS
# launches over BUFFERS buffers, each instantiated and kept) and REPLAYS
# launches of each graph, under the shim in guard mode with and without
# CAPGUARD_STALE=1. Prints the instructions the check adds per capture (the
# walk at instantiation: the fake driver's answers to its queries included,
# then the shim's own share) and per graph launch.
# Then the wall clock (no valgrind): a capture and instantiation of KERNELS
# launches over BUFFERS buffers, median of CAPTURES, for none, none again
# (the A/A: the noise floor), guard and guard with --stale, alternating,
# ROUNDS rounds; the median of the rounds' medians.
# Usage: bench/run_bench_stale.sh [BUILDDIR] (default build); WALL_ONLY=1 skips callgrind
set -euo pipefail
B=${1:-build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
CUBIN=$SRC/tests/data/kernels_sm90.cubin
CAPTURES=${CAPTURES:-50} KERNELS=${KERNELS:-100} BUFFERS=${BUFFERS:-20} REPLAYS=${REPLAYS:-20}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# instructions of one run: NAME STALE REPLAYS
ir() {
  local name=$1 stale=$2 replays=$3
  env -u CAPGUARD_STALE LD_LIBRARY_PATH="$B/tests/fakecuda" LD_PRELOAD="$B/shim/libcapguard.so" \
    CAPGUARD_MODE=guard CAPGUARD_PRIME="$T/p.cgp" CAPGUARD_SUMMARY=0 ${stale:+CAPGUARD_STALE=1} \
    valgrind --tool=callgrind --callgrind-out-file="$T/$name.out" \
    "$B/bench/bench_stale" "$CUBIN" "$CAPTURES" "$KERNELS" "$BUFFERS" "$replays" >/dev/null 2>"$T/$name.err"
  awk '/^summary:/ {print $2}' "$T/$name.out"
}
# instructions in libcapguard.so's own functions (not the fake driver's)
shim_ir() {
  callgrind_annotate --threshold=100 "$T/$1.out" 2>/dev/null |
    awk '/libcapguard.so/ {gsub(",", "", $1); s += $1} END {print s + 0}'
}

if [ -z "${WALL_ONLY:-}" ]; then # WALL_ONLY=1: the wall clock alone
off=$(ir off "" 0)
on=$(ir on 1 0)
off_r=$(ir off_r "" "$REPLAYS")
on_r=$(ir on_r 1 "$REPLAYS")
shim_off=$(shim_ir off)
shim_on=$(shim_ir on)
shim_off_r=$(shim_ir off_r)
shim_on_r=$(shim_ir on_r)
echo "start-up: $CAPTURES captures of $KERNELS launches over $BUFFERS buffers, guard mode"
echo "  whole process: $off instructions without the check, $on with CAPGUARD_STALE=1"
awk -v a="$off" -v b="$on" -v c="$CAPTURES" -v sa="$shim_off" -v sb="$shim_on" 'BEGIN {
  printf "  per capture: +%.0f instructions (the walk and the fake driver'"'"'s answers); +%.0f of them in libcapguard.so\n", (b - a) / c, (sb - sa) / c
  printf "  the whole start-up: +%.2f%%\n", 100 * (b - a) / a }'
awk -v a="$off" -v b="$on" -v ar="$off_r" -v br="$on_r" -v n="$((CAPTURES * REPLAYS))" 'BEGIN {
  printf "per launch (%d launches, nothing freed), whole process: %.2f instructions without the check, %.2f with it (the fake driver'"'"'s share moves with its hash tables)\n", n, (ar - a) / n, (br - b) / n }'
awk -v a="$shim_off" -v b="$shim_on" -v ar="$shim_off_r" -v br="$shim_on_r" -v n="$((CAPTURES * REPLAYS))" 'BEGIN {
  printf "per launch, in libcapguard.so: %.2f instructions without the check, %.2f with it\n", (ar - a) / n, (br - b) / n }'
fi

# the wall clock: NAME PRELOAD STALE -> the run's median per capture, in us
wall() {
  env -u CAPGUARD_STALE LD_LIBRARY_PATH="$B/tests/fakecuda" ${2:+LD_PRELOAD="$B/shim/libcapguard.so"} \
    CAPGUARD_MODE=guard CAPGUARD_PRIME="$T/w.cgp" CAPGUARD_SUMMARY=0 ${3:+CAPGUARD_STALE=1} \
    "$B/bench/bench_stale" "$CUBIN" "$CAPTURES" "$KERNELS" "$BUFFERS" 0 TIME 2>/dev/null |
    awk -F= '/^median_capture_us=/ {print $2}'
}
ROUNDS=${ROUNDS:-3}
declare -A got=([none]= [aa]= [guard]= [stale]=)
for r in $(seq 1 "$ROUNDS"); do
  order="none aa guard stale"
  [ $((r % 2)) -eq 0 ] && order="stale guard aa none"
  for m in $order; do
    case $m in none|aa) v=$(wall $m "" "");; guard) v=$(wall $m 1 "");; stale) v=$(wall $m 1 1);; esac
    got[$m]="${got[$m]} $v"
  done
done
med() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
n=$(med "${got[none]}") aa=$(med "${got[aa]}") g=$(med "${got[guard]}") st=$(med "${got[stale]}")
echo "wall clock per capture of $KERNELS launches over $BUFFERS buffers (fake driver, median of $CAPTURES, median of $ROUNDS rounds):"
awk -v n="$n" -v aa="$aa" -v g="$g" -v st="$st" 'BEGIN {
  printf "  none %.1f us, none again (A/A) %.1f us (%+.1f), guard %.1f us (%+.1f), --stale %.1f us (%+.1f over guard)\n", n, aa, aa - n, g, g - n, st, st - g }'
for m in none aa guard stale; do echo "  rounds $m:${got[$m]}"; done
