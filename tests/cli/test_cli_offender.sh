#!/usr/bin/env bash
# What broke each capture, from hand-written logs (docs/log-format.md): a
# capture record's broken_by names the first offender (an allocation, with its
# Python line), broken_by null says capguard saw none ("broken by a call
# capguard does not watch", with where the capture began), an older log
# without the key gets no offender (never a guess), an ended capture gets no
# offender line; the new event kinds and verdicts are counted by name, not as
# "other"; repeats and results in words are shown. In the text, --json,
# --html and --trace reports, and in capguard run's closing summary.
. "$(dirname "$0")/lib.sh"
log=$WORK/offender.jsonl
old=$DATA/offender_old.jsonl
sed 's/"run":"@RUN@",//' "$DATA/offender.jsonl" >"$log"
first='first offender cuMemAlloc_v2 at model.py:77 in forward (refused: 900 operation not permitted when stream is capturing, thread 5001)'
unwatched='broken by a call capguard does not watch (began at model.py:60 in capture_decode)'
not_said='the log does not say which call broke it (an older capguard wrote it)'

# --- text
run_cg text report "$log"
expect_rc 1 "report of broken captures"
t=$WORK/text.out
expect_in "$t" "capguard report: 1 log, 1 process, 3 captures, 2 broken" "totals"
expect_in "$t" "calls during capture: 4 (module-load 0, module-unload 0, allocation 1, free 1, graph-exec-destroy 1, event-wait 1); verdicts: refused 1, deferred-free 1, deferred-destroy 1, not-ready 1" "new kinds and verdicts counted by name"
expect_not_in "$t" ", other " "no new word counted as other"
expect_in "$t" "repeats: 2 more calls during capture like one logged" "repeats in the totals"
grep -A5 "pid 5001 capture 1 " "$t" >"$WORK/c1"
expect_in "$WORK/c1" "    $first" "failed capture: first offender with its Python line"
expect_in "$WORK/c1" "where: model.py:77 in forward (libtorch_cuda.so(+0x1234))" "and its native caller"
expect_in "$WORK/c1" "its end returned 901 operation failed due to a previous error during capture" "end result in words"
expect_in "$WORK/c1" "repeats: 2 more calls like one logged" "capture's repeats"
grep -A1 "pid 5001 capture 2 " "$t" >"$WORK/c2"
expect_in "$WORK/c2" "    $unwatched" "broken_by null: said plainly, with where it began"
expect_not_in "$t" "pid 5001 capture 3 " "an ended capture is not listed as broken"
expect_in "$t" "1 capture was first broken by a call other than a module load, which priming cannot serve (cuMemAlloc_v2 at model.py:77 in forward" "advice for a non-load offender"
expect_in "$t" "1 capture was broken by a call capguard does not watch" "advice for an unwatched break"
# broken_by null with a refused call logged later in that capture: the call
# came after the break (the shim checked), so it is not named
late=$WORK/late.jsonl
cp "$log" "$late"
echo '{"v":1,"type":"event","pid":5001,"time_ns":1800000002100000000,"event":"allocation","call":"cuMemAlloc_v2","verdict":"refused","result":900,"driver_result":900,"driver_version":12040,"emulate_driver":0,"tid":5001,"thread_mode":"global","capture":{"id":2,"stream":"0x20","mode":"thread-local","tid":5001,"status":"invalidated","began":"model.py:60 in capture_decode"},"prohibitors":1,"native_stack":[],"python_stack":[{"file":"model.py","line":99,"func":"late"}]}' >>"$late"
run_cg latetext report "$late"
grep -A1 "pid 5001 capture 2 " "$WORK/latetext.out" >"$WORK/c2late"
expect_in "$WORK/c2late" "    $unwatched" "a call logged after an unwatched break is not its offender"
expect_not_in "$WORK/c2late" "model.py:99" "the later call is not named"
# an older log: no key, no offender claimed
run_cg oldtext report "$old"
expect_in "$WORK/oldtext.out" "    $not_said" "older log: no offender"
expect_not_in "$WORK/oldtext.out" "first offender cu" "older log: nothing guessed"
expect_not_in "$WORK/oldtext.out" "does not watch" "older log: not called unwatched"

# --- json
run_cg json report --all --json "$log" "$old"
j=$WORK/json.out
python3 - "$j" >"$WORK/json.check" 2>&1 <<'PY' && pass || { fail "json: $(cat "$WORK/json.check")"; }
import json, sys
d = json.load(open(sys.argv[1]))
caps = {(c["pid"], c["id"]): c for c in d["captures"]}
c1, c2, c3, old = caps[(5001, 1)], caps[(5001, 2)], caps[(5001, 3)], caps[(5101, 1)]
b = c1["broken_by"]
assert b["call"] == "cuMemAlloc_v2" and b["event"] == "allocation" and b["verdict"] == "refused", b
assert b["result"] == 900 and b["python"] == "model.py:77 in forward" and b["from"] == "capture record", b
assert b["result_words"] == "900 operation not permitted when stream is capturing", b
assert c1["offender"] == "named" and c1["end_result"] == 901 and c1["repeats"] == 2, c1
assert "broken_by" in c2 and c2["broken_by"] is None and c2["offender"] == "unwatched", c2
assert c2["offender_text"].startswith("broken by a call capguard does not watch (began at model.py:60"), c2
assert "broken_by" not in c3 and "offender" not in c3 and c3["end_result"] == 0, c3
assert "broken_by" not in old and old["offender"] == "not-said" and old["end_result"] is None, old
procs = {p["pid"]: p for p in d["processes"]}
assert [x["id"] for x in procs[5001]["broken_captures"]] == [1, 2], procs[5001]
assert procs[5001]["broken_captures"][0]["broken_by"]["call"] == "cuMemAlloc_v2"
assert procs[5101]["broken_captures"][0]["offender"] == "not-said"
t = d["totals"]
assert (t["allocation"], t["free"], t["graph_exec_destroy"], t["event_wait"], t["other_calls"]) == (1, 1, 1, 1, 0), t
v = t["verdicts"]
assert (v["deferred-free"], v["deferred-destroy"], v["not-ready"], v["other"]) == (1, 1, 1, 0), v
assert t["repeats"] == 2, t
first = [b for b in d["broken"] if b["pid"] == 5001 and b["id"] == 1][0]["first_call"]
assert first["meaning"] == "operation not permitted when stream is capturing" and first["handle"] is None, first
PY

# --- html
run_cg html report --all --html "$WORK/r.html" "$log" "$old"
h=$WORK/r.html
expect_in "$h" "<th>first offender</th>" "html: the column"
expect_in "$h" "$first" "html: the first offender"
expect_in "$h" "$unwatched" "html: unwatched, with where it began"
expect_in "$h" "$not_said" "html: older log, no offender"
expect_in "$h" "its end returned 901 operation failed due to a previous error during capture" "html: end result"
expect_in "$h" ", allocation 1, free 1, graph-exec-destroy 1, event-wait 1)" "html: new kinds in the totals"
expect_in "$h" "<td>event-wait</td><td style=\"color:#17becf\">not-ready</td><td>600 device not ready</td>" "html: a call's kind, verdict and result in words"

# --- trace
run_cg trace report --trace "$WORK/t.json" "$log"
python3 - "$WORK/t.json" "$first" >"$WORK/trace.check" 2>&1 <<'PY' && pass || fail "trace: $(cat "$WORK/trace.check")"
import json, sys
d = json.load(open(sys.argv[1]))
caps = {e["name"]: e["args"] for e in d["traceEvents"] if e.get("cat") == "capture"}
assert caps["capture 1 (broken)"]["first_offender"] == sys.argv[2], caps
assert caps["capture 2 (broken)"]["first_offender"].startswith("broken by a call capguard does not watch"), caps
assert "first_offender" not in caps["capture 3"] and caps["capture 1 (broken)"]["repeats"] == 2, caps
calls = [e["args"] for e in d["traceEvents"] if e.get("cat") == "call"]
assert any(a.get("handle") == "0x7f00aa000000" and a["result_words"] == "0 no error" for a in calls), calls
PY

# --- capguard run's summary: the log appended by the command, as this run's (its run id)
export CAPGUARD_SHIM=$FAKE_SHIM
run_cg run run --log "$WORK/run.jsonl" -- sh -c 'sed "s/@RUN@/$CAPGUARD_RUN/g" "$1" >>"$CAPGUARD_LOG"' sh "$DATA/offender.jsonl"
s=$WORK/run.err
expect_in "$s" "capguard: 1 process used CUDA, 3 captures, 2 broken; 4 calls during capture (module-load 0, module-unload 0, allocation 1, free 1, graph-exec-destroy 1, event-wait 1): refused 1, deferred-free 1, deferred-destroy 1, not-ready 1" "summary: totals by name"
expect_in "$s" "capguard: broken: pid 5001: capture 1 (stream 0x10, global, began at model.py:50 in capture_graph (libtorch_cuda.so(+0x29c))) broke (its end returned 901 operation failed due to a previous error during capture): $first" "summary: first offender with its Python line"
expect_in "$s" "capguard: broken: pid 5001: capture 2 (stream 0x20, thread-local, began at model.py:60 in capture_decode) broke (its end returned 901 operation failed due to a previous error during capture): broken by a call capguard does not watch" "summary: none seen, with where it began"
[ "$(grep -c '^capguard: broken:' "$s")" -eq 2 ] && pass || fail "summary: one line a broken capture, none for the ended one"
expect_in "$s" "capguard: why: 2 captures broke; the first broke in pid 5001 when it called cuMemAlloc_v2: the driver refused it during capture (CUresult 900 operation not permitted when stream is capturing)" "summary: why, from the logged call"
expect_not_in "$s" "capguard: faster:" "summary: no load advice when no load broke"
expect_in "$s" "capguard: next: no module load broke a capture, so priming cannot help" "summary: next step for a non-load offender"
# an older log: the broken line, and no offender
run_cg runold run --log "$WORK/runold.jsonl" -- sh -c 'cat "$1" >>"$CAPGUARD_LOG"' sh "$old"
expect_in "$WORK/runold.err" "capguard: broken: pid 5101: capture 1 (stream 0x40, global, began at old.py:9 in capture) broke: $not_said" "summary: older log, no offender"
grep '^capguard: broken:' "$WORK/runold.err" >"$WORK/runold.broken"
expect_not_in "$WORK/runold.broken" "does not watch" "summary: older log not called unwatched"
expect_not_in "$WORK/runold.err" "capguard: why:" "summary: older log, no why guessed"
# many broken captures: the first few, then how many more
{ sed 's/"run":"@RUN@",//' "$DATA/offender.jsonl" | head -2
  for i in 1 2 3 4 5; do
    echo "{\"v\":1,\"type\":\"capture\",\"pid\":5001,\"time_ns\":1800000009000000000,\"id\":$((10 + i)),\"stream\":\"0x50\",\"mode\":\"global\",\"tid\":5001,\"status\":\"invalidated\",\"begin_ns\":180000000900000000$i,\"end_ns\":0,\"events\":0,\"began\":\"x.py:$i in f\",\"broken_by\":null}"
  done; } >"$WORK/many.jsonl"
run_cg many run --log "$WORK/runmany.jsonl" -- sh -c 'cat "$1" >>"$CAPGUARD_LOG"' sh "$WORK/many.jsonl"
[ "$(grep -c '^capguard: broken: pid' "$WORK/many.err")" -eq 3 ] && pass || fail "summary: three capture lines, wanted 3: $(cat "$WORK/many.err")"
expect_in "$WORK/many.err" "capguard: broken: and 2 more broken captures (capguard report lists them all)" "summary: the rest counted"
expect_in "$WORK/many.err" "capguard: broken: pid 5001: capture 11 (stream 0x50, global, began at x.py:1 in f) broke: broken by a call capguard does not watch" "summary: invalidated at exit, none seen"
# calls that guard mode answered so that the capture survived: no offender, not "nothing happened"
grep -v '"id":1,\|"id":2,\|"event":"allocation"' "$DATA/offender.jsonl" | sed 's/"captures_broken":2/"captures_broken":0/' >"$WORK/kept.jsonl"
run_cg kept run --log "$WORK/runkept.jsonl" -- sh -c 'sed "s/@RUN@/$CAPGUARD_RUN/g" "$1" >>"$CAPGUARD_LOG"' sh "$WORK/kept.jsonl"
expect_in "$WORK/kept.err" "3 captures, 0 broken; 3 calls during capture (module-load 0, module-unload 0, free 1, graph-exec-destroy 1, event-wait 1): deferred-free 1, deferred-destroy 1, not-ready 1" "kept: the calls by kind and verdict"
expect_not_in "$WORK/kept.err" "capguard: broken:" "kept: no broken line"
expect_in "$WORK/kept.err" "capguard: next: no capture broke: the calls during capture (counted above) were handled" "kept: next does not say no calls were made"
run_cg keptreport report "$WORK/runkept.jsonl"
expect_in "$WORK/keptreport.out" "3 calls during capture (deferred-free 1, deferred-destroy 1, not-ready 1) would break the capture without capguard" "kept: the advice"
expect_not_in "$WORK/keptreport.out" "no forbidden calls during capture" "kept: not called nothing"
finish
