#!/usr/bin/env bash
# The hang watch's cost to a graph launch on the CPU (bench_hang_launch over
# the fake driver, the shim preloaded in guard mode): ROUNDS rounds, each
# running the watch off, on, and off again, alternating so that a machine
# that speeds up or slows down meets both; the median of each. Prints the
# nanoseconds a launch costs off and on, the A/A (off against off) and the
# nanoseconds the watch adds; exits 1 when it adds more than LIMIT_NS (1000:
# the goal, a launch at most +1 us with CAPGUARD_HANG_S set).
# Usage: bench/run_bench_hang.sh [BUILDDIR] (default build)
set -euo pipefail
B=${1:-build}
ROUNDS=${ROUNDS:-7} N=${N:-200000} LIMIT_NS=${LIMIT_NS:-1000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
one() {
  env -u CAPGUARD_HANG_S -u CAPGUARD_LOG LD_LIBRARY_PATH="$B/tests/fakecuda" LD_PRELOAD="$B/shim/libcapguard.so" \
    CAPGUARD_MODE=guard CAPGUARD_PRIME="$T/p.cgp" CAPGUARD_SUMMARY=0 CAPGUARD_QUIET=1 ${1:+CAPGUARD_HANG_S=$1} \
    "$B/bench/bench_hang_launch" "$N"
}
for _ in $(seq "$ROUNDS"); do
  echo "off $(one '')"
  echo "on $(one 600)"
  echo "off2 $(one '')"
done >"$T/runs"
median() { awk -v k="$1" '$1 == k {print $2}' "$T/runs" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
off=$(median off) on=$(median on) off2=$(median off2)
awk -v off="$off" -v on="$on" -v off2="$off2" -v lim="$LIMIT_NS" -v n="$N" -v r="$ROUNDS" 'BEGIN {
  printf "graph launch, CPU ns (median of %d rounds of %d launches): watch off %.1f, on %.1f; A/A (off, off) %+.1f\n", r, n, off, on, off2 - off
  printf "the hang watch adds %+.1f ns a launch (limit %d)\n", on - off, lim
  exit (on - off > lim) ? 1 : 0 }'
