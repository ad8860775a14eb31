#!/usr/bin/env bash
# exit() from a signal handler never hangs in capguard's exit: a SIGALRM
# handler calls exit(0) while the host captures, allocates in captures
# (broken, reported) and ends them in a loop, so that the signal often
# lands while capguard holds a lock its exit wants (the model's, judging the
# allocation; the output's; the priming file's). capguard's exit waits a
# moment and skips what it cannot have, with one line. Before, 2 to 4 runs
# in 40 to 150 hung. RUNS (default 60) runs in each mode, each with a
# timeout of 10 s: 0 hangs, every run exits 0.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=13000
runs=${RUNS:-60}
hangs=0
bad=0
for mode in guard report; do
  for i in $(seq 1 "$runs"); do
    usec=$(( (RANDOM % 40 + 1) * 500 ))
    CAPGUARD_MODE=$mode CAPGUARD_QUIET=1 CAPGUARD_PRIME="$WORK/p.cgp" CAPGUARD_LOG="$WORK/$mode.jsonl" \
      LD_PRELOAD="$REAL_SHIM" timeout -s KILL 10 "$HOST_SIGNALS" exit-in-handler $usec >"$WORK/run.out" 2>&1
    rc=$?
    if [ $rc -eq 137 ]; then
      hangs=$((hangs + 1))
      echo "hung: $mode, alarm after $usec us" >&2
    elif [ $rc -ne 0 ]; then
      bad=$((bad + 1))
      echo "exit $rc: $mode, alarm after $usec us:" >&2
      sed 's/^/    | /' "$WORK/run.out" >&2
    fi
  done
done
echo "exit() from a SIGALRM handler: $((2 * runs)) runs, $hangs hung, $bad exited other than 0"
[ $hangs -eq 0 ] && pass || fail "$hangs of $((2 * runs)) runs hung in capguard's exit"
[ $bad -eq 0 ] && pass || fail "$bad of $((2 * runs)) runs exited other than 0"
finish
