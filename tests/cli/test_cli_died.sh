#!/usr/bin/env bash
# A host killed or crashed mid-capture, and a log cut short, are never told
# as healthy: capguard run names the signal from the command's wait status,
# the summary and capguard report name every process that ended without an
# exit record, report exits 1 for such a log, and a host killed after its
# load was recorded is told to run again (the next run is served), not that
# nothing was recorded. Over the fake driver, with the real shim.
. "$(dirname "$0")/lib.sh"
use_real_shim
host() { # host NAME HOW [capguard run options]: dying_host HOW under capguard run, emulating 12.2
  local name=$1 how=$2; shift 2
  "$CAPGUARD" run -q --emulate-driver 12020 --log "$WORK/$name.jsonl" --prime "$WORK/$name.cgp" "$@" -- \
    "$DYING_HOST" "$how" "$CUBIN" cg_test_fill >"$WORK/$name.out" 2>"$WORK/$name.err"; rc=$?
}

# --- SIGKILL after the load was refused and recorded
host kill kill
expect_rc 137 "killed host: 128+9"
expect_in "$WORK/kill.err" "capguard: the command (pid " "the summary names the command"
expect_in "$WORK/kill.err" ") was killed by signal 9 (SIGKILL)" "the summary names the signal"
expect_in "$WORK/kill.err" "capguard: 1 process ended without an exit record (killed, crashed, left through _exit, or still running): pid " "the process without an exit record"
expect_in "$WORK/kill.err" "killed by signal 9 (SIGKILL); what it did after its last line is not in the log" "its signal, in the list"
expect_not_in "$WORK/kill.err" "nothing was recorded" "the image was recorded: not 'nothing was recorded'"
expect_in "$WORK/kill.err" "capguard: next: run it again; the 1 image loaded during capture, recorded in $WORK/kill.cgp" "run it again"
[ -s "$WORK/kill.cgp" ] && pass || fail "the killed host's image is not in the priming file"
# ...and it is true: the next run is served (the host is killed again, after the load)
"$CAPGUARD" run -q --emulate-driver 12020 --log "$WORK/kill3.jsonl" --prime "$WORK/kill.cgp" -- \
  "$DYING_HOST" kill "$CUBIN" cg_test_fill >/dev/null 2>&1
grep -q '"call":"cuModuleLoadData","verdict":"served"' "$WORK/kill3.jsonl" && pass || fail "run 2 was not served"
run_cg kill-report report "$WORK/kill.jsonl"
expect_rc 1 "report of a log with a process killed mid-capture"
expect_in "$WORK/kill-report.out" "1 ended without an exit record" "report's headline"
expect_in "$WORK/kill-report.out" "Ended without an exit record" "report's section"
pid=$(grep -o '"type":"process","pid":[0-9]*' "$WORK/kill.jsonl" | grep -o '[0-9]*$')
expect_in "$WORK/kill-report.out" "  pid $pid dying_host kill" "report lists the killed process"
# capguard run wrote the signal it saw into the log: the report, read later, says it
grep -q "{\"v\":1,\"type\":\"ended\",\"pid\":$pid,\"time_ns\":[0-9]*,\"signal\":9}" "$WORK/kill.jsonl" && pass \
  || fail "the log has no ended record with signal 9: $(tail -1 "$WORK/kill.jsonl")"
expect_in "$WORK/kill-report.out" "cg_test_fill, killed by signal 9 (SIGKILL): 1 capture, 1 call during capture logged" "report: the signal"
"$CAPGUARD" report --json "$WORK/kill.jsonl" >"$WORK/kill.json" 2>/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["totals"]["ended_without_exit_record"] == 1, d["totals"]; assert [p["exited"] for p in d["processes"]] == [False], d["processes"]; assert d["processes"][0]["signal"] == 9, d["processes"]; assert d["processes"][0]["last_logged"].startswith("cuModuleLoadData (module-load, emulated) during capture 1 at dying_host(main+"), d["processes"]' "$WORK/kill.json" \
  && pass || fail "report --json: totals.ended_without_exit_record is not 1"
# the HTML page lists it as the text does (which pid, what it last logged),
# and the command exits as the text report does
run_cg kill-html report --html "$WORK/kill.html" "$WORK/kill.jsonl"
expect_rc 1 "report --html of a log with a process killed mid-capture"
expect_in "$WORK/kill.html" "<h2 class=\"bad\">Ended without an exit record</h2>" "HTML: the section"
expect_in "$WORK/kill.html" "<span class=\"bad\">1 ended without an exit record</span>" "HTML: the headline"
expect_in "$WORK/kill.html" "<tr><td class=\"bad\">pid $pid</td><td><code>dying_host kill " "HTML: the killed process's row"
expect_in "$WORK/kill.html" "<td>cuModuleLoadData (module-load, emulated) during capture 1 at dying_host(main+" "HTML: what it last logged"
expect_in "$WORK/kill.html" "</code></td><td>killed by signal 9 (SIGKILL)</td>" "HTML: the signal"
expect_in "$WORK/kill-report.out" "    last logged: cuModuleLoadData (module-load, emulated) during capture 1 at dying_host(main+" "text: what it last logged"

# --- SIGSEGV, a crash
host segv segv
expect_rc 139 "crashed host: 128+11"
expect_in "$WORK/segv.err" "was killed by signal 11 (SIGSEGV)" "the summary names SIGSEGV"
run_cg segv-report report "$WORK/segv.jsonl"
expect_in "$WORK/segv-report.out" ", killed by signal 11 (SIGSEGV): " "report: SIGSEGV"

# --- killed before any call during its capture: the log has no capture at all
host quiet quiet-kill
expect_rc 137 "quietly killed host"
expect_in "$WORK/quiet.err" "was killed by signal 9 (SIGKILL)" "signal named"
expect_not_in "$WORK/quiet.err" "nothing to do" "a killed host is not told 'nothing to do'"
expect_in "$WORK/quiet.err" "capguard: next: the command was killed by signal 9 (SIGKILL), which no process can catch: the kernel's OOM killer" "next: why it died, from its signal"
run_cg quiet-report report "$WORK/quiet.jsonl"
expect_rc 1 "report of a log whose only process was killed"
expect_not_in "$WORK/quiet-report.out" "nothing to do" "report: not 'nothing to do'"
run_cg quiet-html report --html "$WORK/quiet.html" "$WORK/quiet.jsonl"
expect_rc 1 "report --html of a log whose only process was killed"
expect_in "$WORK/quiet.html" "<h2 class=\"bad\">Ended without an exit record</h2>" "HTML: a process killed before any call during capture"

# --- a worker killed while its parent exits 0: the run's status cannot tell, the summary does
"$CAPGUARD" run -q --emulate-driver 12020 --log "$WORK/tree.jsonl" --prime "$WORK/tree.cgp" -- \
  sh -c '"$@"; exit 0' sh "$DYING_HOST" kill "$CUBIN" cg_test_fill >"$WORK/tree.out" 2>"$WORK/tree.err"; rc=$?
expect_rc 0 "the parent exits 0"
expect_in "$WORK/tree.err" "1 process ended without an exit record" "a killed worker under a parent that exits 0"

# --- a log cut to two thirds: never healthy
"$CAPGUARD" run -q --log "$WORK/whole.jsonl" --prime "$WORK/whole.cgp" -- \
  "$VLLM_LIKE" --workers 4 "$CUBIN" cg_test_fill >"$WORK/whole.out" 2>"$WORK/whole.err"; rc=$?
expect_rc 0 "the whole run (driver 13.0 allows the loads)"
run_cg whole-report report "$WORK/whole.jsonl"
expect_rc 0 "report of the whole log"
size=$(stat -c %s "$WORK/whole.jsonl")
head -c $((size * 2 / 3)) "$WORK/whole.jsonl" >"$WORK/cut.jsonl"
run_cg cut-report report "$WORK/cut.jsonl"
expect_rc 1 "report of a log cut to two thirds"
grep -qE "the log is cut short|ended without an exit record" "$WORK/cut-report.out" && pass \
  || fail "cut log: neither a cut line nor processes without an exit record said: $(head -3 "$WORK/cut-report.out")"
expect_not_in "$WORK/cut-report.out" "nothing to do" "cut log: not 'nothing to do'"
# cut on a line boundary: the processes whose summaries were cut are named
lines=$(wc -l <"$WORK/whole.jsonl")
head -n $((lines * 2 / 3)) "$WORK/whole.jsonl" >"$WORK/cut-lines.jsonl"
run_cg cut-lines-report report "$WORK/cut-lines.jsonl"
expect_rc 1 "report of a log cut to two thirds of its lines"
# cut mid-line
head -c $(( $(stat -c %s "$WORK/cut-lines.jsonl") + 10 )) "$WORK/whole.jsonl" >"$WORK/cut-mid.jsonl"
run_cg cut-mid-report report "$WORK/cut-mid.jsonl"
expect_rc 1 "report of a log cut mid-line"
expect_in "$WORK/cut-mid-report.out" "the log is cut short: the last line of 1 file ends without a newline" "the cut line is said"
run_cg cut-mid-html report --html "$WORK/cut-mid.html" "$WORK/cut-mid.jsonl"
expect_rc 1 "report --html of a log cut mid-line"
expect_in "$WORK/cut-mid.html" "The log is cut short: the last line of 1 file ends without a newline" "HTML: the cut line is said"
"$CAPGUARD" report --json "$WORK/cut-mid.jsonl" >"$WORK/cut-mid.json" 2>/dev/null
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["lines"]["files_cut_short"] == 1' "$WORK/cut-mid.json" \
  && pass || fail "report --json: lines.files_cut_short is not 1"
finish
