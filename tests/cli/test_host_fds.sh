#!/usr/bin/env bash
# The log is never written into a descriptor that is no longer capguard's:
# a daemon-style host closes every descriptor from 3 up and opens its own
# data file (which gets the log's old number), before its CUDA set-up or
# after it. The host's file must be byte-identical to what it wrote (before:
# capguard's JSON lines landed in it, 26 bytes became thousands), and
# capguard's records still arrive: the log is opened again by its path, and
# one line says so.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=13000
printf 'host: line 1\nhost: line 2\n' >"$WORK/want"
for when in before after; do
  for mode in report guard; do
    # the log there at start-up, so that the shim opens it then (one not
    # there waits for the first use of the driver, after the host's close)
    rm -f "$WORK/data"
    : >"$WORK/log.jsonl"
    CAPGUARD_MODE=$mode CAPGUARD_LOG="$WORK/log.jsonl" CAPGUARD_PRIME="$WORK/p.cgp" LD_PRELOAD="$REAL_SHIM" \
      "$HOST_FDS" $when "$WORK/data" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    expect_rc 0 "$when, $mode: the host"
    cmp -s "$WORK/data" "$WORK/want" && pass || {
      fail "$when, $mode: the host's file holds $(stat -c %s "$WORK/data") bytes, not its own 26"
      head -c 600 "$WORK/data" | sed 's/^/    | /' >&2
    }
    expect_in "$WORK/out" "host: data file on descriptor 3" "$when, $mode: the host's file took the log's number"
    [ "$(grep -c "the log's descriptor was closed by the program" "$WORK/err")" -eq 1 ] && pass \
      || fail "$when, $mode: one line says the log was opened again"
    # every capture after the close is in the log, and its summary
    n=$(grep -c '"type":"capture"' "$WORK/log.jsonl")
    [ "$n" -ge 2 ] && pass || fail "$when, $mode: $n capture records in the log after the close, wanted 2 or more"
    expect_in "$WORK/log.jsonl" '"type":"summary"' "$when, $mode: the summary reached the log"
    expect_not_in "$WORK/log.jsonl" '"log_incomplete"' "$when, $mode: no line lost"
  done
done
# a log that cannot be opened again (its directory gone): one line says why,
# the host's file is still its own
mkdir -p "$WORK/gone"
: >"$WORK/gone/log.jsonl"
CAPGUARD_LOG="$WORK/gone/log.jsonl" LD_PRELOAD="$REAL_SHIM" \
  "$HOST_FDS" before "$WORK/data" "$WORK/gone/log.jsonl" >"$WORK/out" 2>"$WORK/err"
rc=$?
expect_rc 0 "a log that cannot be opened again: the host"
cmp -s "$WORK/data" "$WORK/want" && pass || fail "a log that cannot be opened again: the host's file changed"
expect_in "$WORK/err" "could not be opened again" "a log that cannot be opened again: said"
finish
