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
# SIGCHLD ignored by the parent (inherited across exec): run sets it back to the
# default for itself and the command, reaps the command, keeps its status (7)
# and says its summary (before: "lost track of 'sh': No child processes", 125)
ignoring_chld() { perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV' "$@"; }
ignoring_chld "$CAPGUARD" run -- sh -c 'exit 7' >"$WORK/chld.out" 2>"$WORK/chld.err"
rc=$?
expect_rc 7 "SIGCHLD ignored by run's parent: the command's status"
expect_in "$WORK/chld.err" "capguard: 1 process used CUDA, 0 captures" "SIGCHLD ignored by run's parent: the summary"
expect_not_in "$WORK/chld.err" "lost track" "SIGCHLD ignored by run's parent: the command is not lost"
# the command's ignored set (SigIgn; bit 16 is SIGCHLD, 17) has it clear
ignoring_chld "$CAPGUARD" run -q -- grep ^SigIgn: /proc/self/status >"$WORK/chld-ign.out" 2>/dev/null
ign=$(sed -n 's/^SigIgn:\s*//p' "$WORK/chld-ign.out")
[ -n "$ign" ] && [ $(( 0x$ign & 0x10000 )) -eq 0 ] && pass ||
  fail "SIGCHLD ignored by run's parent: the command still ignores it (SigIgn '$ign')"
finish
