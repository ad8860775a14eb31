#!/usr/bin/env bash
# Attack 7 of docs/reliability.md: a process that exits with captures open writes a capture
# record for each (status active, or invalidated with its first offender),
# its summary counts them, and capguard run's summary and capguard report
# show them as open at exit.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=13000

# --- the shim alone: two captures open at exit
CAPGUARD_LOG=$WORK/open.jsonl LD_PRELOAD=$REAL_SHIM "$ATTACK_FILES" open-at-exit 2 >"$WORK/open.out" 2>"$WORK/open.err"; rc=$?
expect_rc 0 "the program exits as it would without capguard"
n=$(grep -c '"type":"capture".*"status":"active"' "$WORK/open.jsonl"); [ "$n" -eq 2 ] && pass || fail "$n active capture records, wanted 2"
grep '"type":"capture"' "$WORK/open.jsonl" | grep -q '"end_result"' && fail "an open capture has an end_result" || pass
grep -q '"type":"summary".*"captures":2,"captures_broken":0,"captures_open":2' "$WORK/open.jsonl" && pass \
  || fail "the summary record does not count 2 open"
# the records come before the summary
last=$(tail -n 1 "$WORK/open.jsonl"); [[ $last == *'"type":"summary"'* ]] && pass || fail "the summary is not the last line"
expect_in "$WORK/open.err" "capguard: 2 captures (2 open at exit), no events" "the exit line says 2 open at exit"

# --- capguard run and capguard report
"$CAPGUARD" run --log "$WORK/run.jsonl" -- "$ATTACK_FILES" open-at-exit 2 >/dev/null 2>"$WORK/run.err"; rc=$?
expect_rc 0 "capguard run: the command's status"
expect_in "$WORK/run.err" "capguard: 1 process used CUDA, 2 captures, 0 broken, 2 open at exit;" "run summary counts them"
expect_in "$WORK/run.err" "capguard: 2 captures were still open when their process exited: no graph was made" "run summary says what it means"
"$CAPGUARD" report "$WORK/run.jsonl" >"$WORK/report.out" 2>&1
expect_in "$WORK/report.out" "2 captures, 0 broken, 2 open at exit" "report: header"
expect_in "$WORK/report.out" "Open at exit" "report: a section for them"
n=$(grep -c "capture [12] (stream 0x[0-9a-f]*, relaxed, open at exit; began " "$WORK/report.out"); [ "$n" -eq 2 ] && pass || fail "report lists $n of 2 open captures"
"$CAPGUARD" report --json "$WORK/run.jsonl" >"$WORK/report.json" 2>&1
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; assert t["captures_open_at_exit"] == 2, t' "$WORK/report.json" \
  && pass || fail "report --json: totals.captures_open_at_exit is not 2"

# --- a capture broken and left open: invalidated, with its first offender
CAPGUARD_MODE=report FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_LOG=$WORK/broken.jsonl LD_PRELOAD=$REAL_SHIM \
  "$ATTACK_FILES" open-broken 1 >/dev/null 2>"$WORK/broken.err"; rc=$?
expect_rc 0 "open-broken exits 0"
grep -q '"type":"capture".*"status":"invalidated".*"broken_by":{"call":"cuModuleLoadData"' "$WORK/broken.jsonl" && pass \
  || { fail "no invalidated record naming its offender"; grep capture "$WORK/broken.jsonl" >&2; }
"$CAPGUARD" report "$WORK/broken.jsonl" >"$WORK/broken-report.out" 2>&1
expect_in "$WORK/broken-report.out" "broken, open at exit; began" "report: the broken one, open at exit"
finish
