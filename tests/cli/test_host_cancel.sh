#!/usr/bin/env bash
# No capguard lock is left held by a cancelled thread: threads that capture
# and load a new image in each capture (guard mode records each one in the
# priming file, under capguard's recording lock, across open, flock and
# pwrite) are pthread_cancel'ed; then the main thread captures with a load.
# Before, 7 of 12 runs hung. RUNS (default 10) processes on each driver, of
# 5 rounds of 4 threads, each with a timeout: 0 hangs, every run exits 0.
. "$(dirname "$0")/lib.sh"
use_real_shim
runs=${RUNS:-10}
hangs=0
bad=0
total=0
for drv in 13000 12020; do
  for i in $(seq 1 "$runs"); do
    total=$((total + 1))
    FAKECUDA_DRIVER_VERSION=$drv CAPGUARD_MODE=guard CAPGUARD_QUIET=1 CAPGUARD_PRIME="$WORK/p$drv.cgp" \
      CAPGUARD_LOG="$WORK/log.jsonl" LD_PRELOAD="$REAL_SHIM" timeout -s KILL 10 "$HOST_CANCEL" 5 4 >"$WORK/run.out" 2>&1
    rc=$?
    if [ $rc -eq 137 ]; then
      hangs=$((hangs + 1))
      echo "hung: driver $drv, run $i" >&2
    elif [ $rc -ne 0 ] || ! grep -q "host: 5 rounds" "$WORK/run.out"; then
      bad=$((bad + 1))
      echo "exit $rc: driver $drv, run $i:" >&2
      sed 's/^/    | /' "$WORK/run.out" >&2
    fi
  done
done
echo "threads cancelled inside capguard: $total runs, $hangs hung, $bad failed"
[ $hangs -eq 0 ] && pass || fail "$hangs of $total runs hung after threads were cancelled"
[ $bad -eq 0 ] && pass || fail "$bad of $total runs failed"
"$CAPGUARD" prime verify "$WORK/p12020.cgp" >"$WORK/verify.out" 2>&1
expect_in "$WORK/verify.out" ", 0 damaged" "the priming file after the cancellations"
# the same host without capguard, as the anchor
FAKECUDA_DRIVER_VERSION=13000 timeout -s KILL 20 "$HOST_CANCEL" 5 4 >"$WORK/bare.out" 2>&1; rc=$?
expect_rc 0 "without capguard"
finish
