#!/usr/bin/env bash
# Attacks 9 and 11 of docs/reliability.md: a log or mode that cannot be used is never a
# silent loss, and the log is opened under the priming file's rules.
#   - capguard run refuses an unusable --log or CAPGUARD_LOG (a missing
#     directory, a directory, a symbolic link) and an unknown CAPGUARD_MODE
#     before it starts the command: one line, exit 2, the command not run;
#   - the shim says at start-up when it cannot open its log;
#   - an unknown CAPGUARD_MODE keeps guard (the priming file is written)
#     with one warning;
#   - the shim never follows a symbolic link to a log (the victim is left
#     as it was), refuses a log owned by another user or writable by others.
. "$(dirname "$0")/lib.sh"
use_real_shim
ran=$WORK/ran   # the command creates it: it must not exist after a refusal

# refused REASON-SUBSTRING WHAT CAPGUARD-ARGS...: exit 2, one line, command not started
refused() {
  local want=$1 what=$2; shift 2
  rm -f "$ran"
  "$CAPGUARD" "$@" -- sh -c "touch '$ran'" >"$WORK/ref.out" 2>"$WORK/ref.err" </dev/null; rc=$?
  expect_rc 2 "$what"
  expect_lines "$WORK/ref.err" 1 "$what: one line"
  expect_in "$WORK/ref.err" "$want" "$what: says why"
  [ -e "$ran" ] && fail "$what: the command ran" || pass
}
refused "capguard run: the log /nonexistent/dir/x.jsonl cannot be created: its directory /nonexistent/dir does not exist" \
  "--log in a missing directory" run --log /nonexistent/dir/x.jsonl
refused "is a directory, not a file" "--log ." run --log .
refused "names a directory, not a file" "--log DIR/" run --log "$WORK/"
CAPGUARD_LOG=/nonexistent/dir/y.jsonl refused "the log /nonexistent/dir/y.jsonl cannot be created: its directory /nonexistent/dir does not exist (from CAPGUARD_LOG)" \
  "CAPGUARD_LOG in a missing directory" run
CAPGUARD_LOG=$WORK refused "is a directory, not a file (from CAPGUARD_LOG)" "CAPGUARD_LOG a directory" run
CAPGUARD_MODE=gaurd refused "capguard run: CAPGUARD_MODE must be guard, report or off, not 'gaurd'" \
  "CAPGUARD_MODE typo" run
echo victim >"$WORK/victim"
ln -s "$WORK/victim" "$WORK/link.jsonl"
refused "is a symbolic link, which capguard does not follow" "--log a symlink" run --log "$WORK/link.jsonl"
# a usable log, and --mode over a bad CAPGUARD_MODE, still run
CAPGUARD_MODE=gaurd "$CAPGUARD" run --mode report --log "$WORK/ok.jsonl" -- sh -c "touch '$ran'" >/dev/null 2>&1; rc=$?
expect_rc 0 "--mode given: CAPGUARD_MODE is not used"
[ -e "$ran" ] && pass || fail "the command did not run with a usable log"
"$CAPGUARD" run --log "$WORK/pp-%p.jsonl" -- true >/dev/null 2>&1; rc=$?
expect_rc 0 "a %p log in an existing directory"

# --- the shim itself, without capguard run
CAPGUARD_LOG=/nonexistent/dir/z.jsonl LD_PRELOAD=$REAL_SHIM /bin/true 2>"$WORK/shim-nolog.err"; rc=$?
expect_rc 0 "the host runs without its log"
expect_in "$WORK/shim-nolog.err" "capguard: cannot open log /nonexistent/dir/z.jsonl: it cannot be created: its directory does not exist; reporting on stderr only" \
  "the shim says at start-up that it cannot open its log"
# the symlink: refused, the victim untouched, whatever the program does
CAPGUARD_MODE=report CAPGUARD_LOG=$WORK/link.jsonl LD_PRELOAD=$REAL_SHIM "$STARTUP_LIKE" >/dev/null 2>"$WORK/shim-link.err"
[ "$(cat "$WORK/victim")" = victim ] && pass || fail "the log followed a symbolic link: the victim grew to $(wc -c <"$WORK/victim") bytes"
expect_in "$WORK/shim-link.err" "capguard: cannot open log $WORK/link.jsonl: it is a symbolic link, which capguard does not follow" "the shim refuses a symlinked log"
# writable by others: refused, as the priming file is
touch "$WORK/open.jsonl"; chmod 0666 "$WORK/open.jsonl"
CAPGUARD_LOG=$WORK/open.jsonl LD_PRELOAD=$REAL_SHIM /bin/true 2>"$WORK/shim-open.err"
expect_in "$WORK/shim-open.err" "capguard: cannot open log $WORK/open.jsonl: it is writable by group or others (mode 666)" "a log others may write is refused"
[ -s "$WORK/open.jsonl" ] && fail "a log writable by others was written" || pass
refused "is writable by group or others" "capguard run: --log writable by others" run --log "$WORK/open.jsonl"

# --- an unknown CAPGUARD_MODE keeps guard: the load mid-capture on 12.2 is recorded
CAPGUARD_MODE=gaurd CAPGUARD_PRIME=$WORK/typo.cgp CAPGUARD_LOG=$WORK/typo.jsonl FAKECUDA_DRIVER_VERSION=12020 \
  LD_PRELOAD=$REAL_SHIM "$STARTUP_LIKE" >/dev/null 2>"$WORK/typo.err"
[ "$(grep -c "CAPGUARD_MODE=gaurd is not a mode (guard, report, off); using guard, the default" "$WORK/typo.err")" -eq 1 ] \
  && pass || fail "the typo is said once"
grep -q '"type":"start".*"mode":"guard"' "$WORK/typo.jsonl" && pass || fail "the shim did not run in guard mode"
[ -s "$WORK/typo.cgp" ] && pass || fail "no priming file written: protection was off"
finish
