#!/usr/bin/env bash
# Advice from the true cause: a command interrupted by Ctrl-C (SIGINT),
# stopped by SIGTERM, killed by SIGKILL (the OOM killer's signal), crashed
# (SIGSEGV), or whose log the disk could not hold: each next: says what it
# was, with its own next step, and only SIGKILL's mentions the OOM killer.
# A process interrupted with a capture open is not said to have made "0
# captures": what it did after its last line is not in the log.
. "$(dirname "$0")/lib.sh"
use_real_shim
host() { # host NAME HOW
  "$CAPGUARD" run -q --log "$WORK/$1.jsonl" --prime "$WORK/p.cgp" -- "$DYING_HOST" "$2" "$CUBIN" cg_test_fill \
    >"$WORK/$1.out" 2>"$WORK/$1.err"
  rc=$?
}
host int int
expect_rc 130 "Ctrl-C: 128+2"
expect_in "$WORK/int.err" "capguard: next: the command was interrupted by signal 2 (SIGINT), Ctrl-C, before it ended" "Ctrl-C said as what it was"
expect_in "$WORK/int.err" "run it again and let it finish" "its next step"
expect_not_in "$WORK/int.err" "OOM" "Ctrl-C is not the OOM killer"
expect_not_in "$WORK/int.err" " 0 captures," "not '0 captures': a capture was open"
expect_in "$WORK/int.err" "0 captures logged" "the count is what was logged"
run_cg int-report report "$WORK/int.jsonl"
expect_not_in "$WORK/int-report.out" " 0 captures," "report: not '0 captures'"
expect_in "$WORK/int-report.out" "no capture and no call during capture logged (a capture still open when it ended is not)" "report: what the log cannot hold"
expect_in "$WORK/int-report.out" "interrupted by signal 2 (SIGINT), Ctrl-C" "report: the cause"

host term term
expect_rc 143 "SIGTERM: 128+15"
expect_in "$WORK/term.err" "capguard: next: the command was asked to stop by signal 15 (SIGTERM), from a supervisor" "SIGTERM said as what it was"
expect_in "$WORK/term.err" "find who sent it" "its next step"
expect_not_in "$WORK/term.err" "OOM" "SIGTERM is not the OOM killer"

host kill quiet-kill
expect_rc 137 "SIGKILL: 128+9"
expect_in "$WORK/kill.err" "capguard: next: the command was killed by signal 9 (SIGKILL), which no process can catch: the kernel's OOM killer (dmesg | grep -i 'killed process' names it)" "SIGKILL: the OOM killer, and how to see it"

host segv segv
expect_in "$WORK/segv.err" "capguard: next: the command crashed (signal 11 (SIGSEGV)): its own output and a core dump" "a crash said as one"
expect_not_in "$WORK/segv.err" "OOM" "a crash is not the OOM killer"
expect_not_in "$WORK/segv.err" "nothing was recorded for the next run" "not the priming dead end"

# a full disk (a 64 KiB tmpfs), where mounting is allowed: the log's own cause, not the OOM killer
mkdir -p "$WORK/small"
if mount -t tmpfs -o size=64k tmpfs "$WORK/small" 2>/dev/null; then
  # room for the first lines only: the rest, its exit record included, is lost
  head -c 60000 /dev/zero >"$WORK/small/filler" 2>/dev/null
  "$CAPGUARD" run -q --log "$WORK/small/full.jsonl" --prime "$WORK/fs.cgp" -- "$DYING_HOST" kill "$CUBIN" cg_test_fill \
    >/dev/null 2>"$WORK/fs.err"
  umount "$WORK/small"
  expect_in "$WORK/fs.err" "its filesystem is full" "the full disk said"
  expect_not_in "$WORK/fs.err" "nothing was recorded for the next run" "not the priming dead end"
  expect_in "$WORK/fs.err" "capguard: next: the log is incomplete, so capguard cannot say that nothing broke: free space" "its next step"
else
  echo "note: tmpfs mount not allowed here; the full-disk case was not run"
fi
finish
