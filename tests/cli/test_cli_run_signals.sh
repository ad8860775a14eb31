#!/usr/bin/env bash
# capguard run: a command killed by a signal gives 128+N; signals sent to
# capguard reach the command.
. "$(dirname "$0")/lib.sh"
export CAPGUARD_SHIM=$FAKE_SHIM TMPDIR=$WORK

run_cg term run -q -- sh -c 'kill -TERM $$'; expect_rc 143 "command killed by SIGTERM"
run_cg kill run -q -- sh -c 'kill -KILL $$'; expect_rc 137 "command killed by SIGKILL"

# forwarding: the command traps the signal, says so, and exits with its own code
# Job control on, so that the background command does not start with SIGINT ignored (a
# shell ignores SIGINT and SIGQUIT in background jobs otherwise, and ignored stays ignored).
set -m
forward() { # SIG CODE
  local sig=$1 code=$2 ready=$WORK/ready.$1
  rm -f "$ready"
  "$CAPGUARD" run -q -- sh -c "trap 'echo got $sig; exit $code' $sig; touch '$ready'; while :; do sleep 0.05; done" \
    >"$WORK/fwd.$sig" 2>&1 &
  local pid=$!
  for _ in $(seq 200); do [ -e "$ready" ] && break; sleep 0.05; done
  [ -e "$ready" ] || { fail "command under capguard never started"; kill -KILL "$pid"; return; }
  kill -"$sig" "$pid"
  wait "$pid"; rc=$?
  expect_rc "$code" "exit code after forwarding SIG$sig"
  expect_in "$WORK/fwd.$sig" "got $sig" "SIG$sig reached the command"
}
forward TERM 7
forward INT 8
forward HUP 9
forward USR1 10

# a command that does not catch the forwarded signal dies of it: 128+15
"$CAPGUARD" run -q -- sh -c "touch '$WORK/r2'; exec sleep 30" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do [ -e "$WORK/r2" ] && break; sleep 0.05; done
sleep 0.2
kill -TERM "$pid"; wait "$pid"; rc=$?
expect_rc 143 "uncaught forwarded SIGTERM"
finish
