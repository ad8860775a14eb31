#!/usr/bin/env bash
# One owner for what a log means (tools/meaning/findings.c): every advice that holds
# is given, none dropped without a word (the report kept at most 8 before);
# the all-clear sentence is the same in the report and run's summary; a
# broken capture's "first offender" line is said once under capguard run (by
# its summary), not again by the shim; the shim's own lines say facts only;
# no advice is worded outside the table.
. "$(dirname "$0")/lib.sh"
logs=("$DATA/run1.jsonl" "$DATA/offender.jsonl" "$DATA/offender_old.jsonl" "$DATA/findings_more.jsonl")
sed 's/"run":"@RUN@",//' "$DATA/offender.jsonl" >"$WORK/offender.jsonl"
logs[1]=$WORK/offender.jsonl

# --- eleven findings hold: all eleven are given, in text and JSON
run_cg all report --all "${logs[@]}"
t=$WORK/all.out
for s in "warm these 3 kernels" "each run on a driver that refuses loads" "2 priming records were not used" \
         "1 module load during capture was allowed" "1 module unload during capture was deferred" \
         "during capture (refused by every driver)" "first broken by a call other than a module load" \
         "capguard saw no call break it" "the log does not say which call broke" \
         "served from the priming file: priming works" "would break the capture without capguard"; do
  expect_in "$t" "$s" "every finding is given"
done
# --all gives each run's advice under its run: a finding of two runs is said in each
n=$(sed -n '/^What to do/,$p' "$t" | grep -c '^    - ')
[ "$n" -ge 11 ] && pass || fail "text report: $n advices, wanted at least 11 (none dropped)"
run_cg allj report --all --json "${logs[@]}"
# --all --json: each run's advice and findings in its run (none merged at the top)
python3 - "$WORK/allj.out" >"$WORK/fj" 2>&1 <<'PY' && pass || fail "json findings: $(cat "$WORK/fj")"
import json, sys
d = json.load(open(sys.argv[1]))
assert "advice" not in d and "findings" not in d, "advice merged at the top"
for r in d["runs"]:
    assert len(r["advice"]) == len(r["findings"]) > 0, r
f = [x for r in d["runs"] for x in r["findings"]]
assert len({x["finding"] for x in f}) == 11, sorted({x["finding"] for x in f})
# each run's commands are its own: run 1's (vllm, no priming file named) never
# with run 4's priming file (/tmp/p.cgp), as the merged list had them
r1 = d["runs"][0]
faster = [x for x in r1["findings"] if x["finding"] == "faster"][0]
assert [c["command"].split(" -- ")[0] for c in faster["commands"]] == [
    "capguard prime learn", "capguard prime check", "capguard run --rescue"], faster
assert all(c["command"].endswith(" -- python3 -m vllm.entrypoints.openai.api_server --model m") for c in faster["commands"]), faster
allowed = [x for r in d["runs"] for x in r["findings"] if x["finding"] == "allowed-loads"][0]
assert [c["command"] for c in allowed["commands"]] == [
    "capguard prime learn --prime /tmp/p.cgp -- ./engine",
    "capguard run --emulate-driver 12020 --prime /tmp/p.cgp -- ./engine"], allowed
PY

# --- the all-clear: one sentence, the same in the report and the run summary
printf '%s\n' '{"v":1,"type":"process","pid":7,"time_ns":1,"ppid":1,"argv":["./x"],"mode":"guard","driver_version":12040,"emulate_driver":0,"version":"0.1.0"}' \
  '{"v":1,"type":"summary","pid":7,"time_ns":2,"captures":1,"captures_broken":0,"events":{},"verdicts":{},"primed_loaded":0,"primed_served":0,"primed_unused":0,"recorded":0,"log":"x"}' >"$WORK/clear.jsonl"
run_cg clear report "$WORK/clear.jsonl"
expect_in "$WORK/clear.out" "  - no forbidden calls during capture: nothing to do" "report: the all-clear"
grep -rn "no forbidden calls during capture: nothing to do" "$SOURCE_ROOT/tools" "$SOURCE_ROOT/shim" "$SOURCE_ROOT/detect" >"$WORK/allclear.src"
expect_lines "$WORK/allclear.src" 1 "the all-clear sentence is written once"

# --- calls guard mode kept from breaking a capture are counted by the verdict
# table's routine flag, each verdict that happened named
printf '%s\n' '{"v":1,"type":"process","pid":7,"time_ns":1,"ppid":1,"argv":["./x"],"mode":"guard","driver_version":12040,"emulate_driver":0,"version":"0.1.0"}' \
  '{"v":1,"type":"event","pid":7,"time_ns":3,"event":"event-wait","call":"cuEventQuery","verdict":"not-ready","result":600,"driver_result":-1,"driver_version":12040,"emulate_driver":0,"tid":7,"thread_mode":"global","capture":{"id":1,"stream":"0x30","mode":"global","tid":7,"status":"active","began":"m.py:1 in f"},"prohibitors":1,"handle":"0x66","meaning":"device not ready","native_stack":[],"python_stack":[]}' \
  '{"v":1,"type":"summary","pid":7,"time_ns":4,"captures":1,"captures_broken":0,"events":{"event-wait":1},"verdicts":{"not-ready":1},"primed_loaded":0,"primed_served":0,"primed_unused":0,"recorded":0,"log":"x"}' >"$WORK/kept.jsonl"
run_cg kept report "$WORK/kept.jsonl"
expect_in "$WORK/kept.out" "1 call during capture (not-ready 1) would break the capture without capguard" "kept: by verdict"

# --- nothing is cut without a word: the report names a few processes without
# CUDA and says when there are more
{ printf '%s\n' '{"v":1,"type":"process","pid":7,"time_ns":1,"ppid":1,"argv":["./x"],"mode":"guard","driver_version":12040,"emulate_driver":0,"version":"0.1.0"}'
  for i in 1 2 3 4 5 6; do
    printf '{"v":1,"type":"start","pid":%d,"time_ns":%d,"ppid":7,"mode":"guard","version":"0.9","prime":"","argv":["tool%d"]}\n' $((20 + i)) $((2 + i)) "$i"
  done; } >"$WORK/many.jsonl"
run_cg many report "$WORK/many.jsonl"
expect_in "$WORK/many.out" "and 6 processes without CUDA (tool1, tool2, tool3, tool4, tool5, ...)" "six names: five shown, the rest said"

# ... and a call site's calls are all listed, however many
{ printf '%s\n' '{"v":1,"type":"process","pid":7,"time_ns":1,"ppid":1,"argv":["./x"],"mode":"report","driver_version":12040,"emulate_driver":0,"version":"0.1.0"}'
  i=0
  for call in cuMemAlloc_v2 cuMemAllocHost_v2 cuMemHostAlloc cuMemAllocManaged cuMemHostRegister_v2; do
    i=$((i + 1))
    printf '{"v":1,"type":"event","pid":7,"time_ns":%d,"event":"allocation","call":"%s","verdict":"refused","result":900,"driver_result":900,"driver_version":12040,"emulate_driver":0,"tid":7,"thread_mode":"global","capture":{"id":1,"stream":"0x30","mode":"global","tid":7,"status":"active","began":"m.py:1 in f"},"prohibitors":1,"meaning":"operation not permitted when stream is capturing","native_stack":[],"python_stack":[{"file":"pool.py","line":9,"func":"grow"}]}\n' $((1 + i)) "$call"
  done; } >"$WORK/site.jsonl"
run_cg site report "$WORK/site.jsonl"
expect_in "$WORK/site.out" "cuMemAlloc_v2, cuMemAllocHost_v2, cuMemHostAlloc, cuMemAllocManaged, cuMemHostRegister_v2" "a site's five calls, all named"

# ... and the HTML page's drivers of a run end in "..." past the four it names
{ for i in 0 1 2 3 4; do
    printf '{"v":1,"type":"process","pid":%d,"time_ns":%d,"ppid":%d,"argv":["./x"],"mode":"guard","driver_version":%d,"emulate_driver":0,"version":"0.1.0"}\n' \
      $((7 + i)) $((1 + i)) $([ "$i" = 0 ] && echo 1 || echo 7) $((12000 + 10 * i))
  done; } >"$WORK/drivers.jsonl"
run_cg drivers report --html "$WORK/drivers.html" "$WORK/drivers.jsonl"
expect_in "$WORK/drivers.html" "CUDA 12.0, CUDA 12.1, CUDA 12.2, CUDA 12.3, ..." "five drivers: four named, the rest said"

# --- the shim says facts, not advice
for d in shim detect; do [ -d "$SOURCE_ROOT/$d" ] && pass || fail "no $d/ to search: this test would search nothing"; done
for s in "learn the priming file on this GPU architecture" "prune it"; do
  grep -rn "$s" "$SOURCE_ROOT/shim" "$SOURCE_ROOT/detect" >"$WORK/shimadv" && fail "shim words advice: $(cat "$WORK/shimadv")" || pass
done

# --- the tools word advice only in the findings table: the run summary's
# lines (a log with nothing in it, work that escaped a capture, captures open
# at exit) and the report's note on escaped work are its rows
for s in "drop --mode off to check captures" "check with capguard doctor" "space or pass --log elsewhere" \
         "driver; nothing to check" "before ending %s); capguard report shows" "in capguard report)" \
         "capturing stream, or make it before the capture" "run it again"; do
  grep -rlF "$s" "$SOURCE_ROOT/tools" "$SOURCE_ROOT/shim" "$SOURCE_ROOT/detect" >"$WORK/advsrc"
  [ "$(cat "$WORK/advsrc")" = "$SOURCE_ROOT/tools/meaning/findings.c" ] && pass ||
    fail "\"$s\" worded outside tools/meaning/findings.c: $(tr '\n' ' ' <"$WORK/advsrc")"
done

# --- under capguard run, a broken capture's line is said once (by the summary)
use_real_shim
"$CAPGUARD" run --mode report --log "$WORK/a.jsonl" -- "$BREAKER_PROBE" --route dlsym --op alloc \
  >"$WORK/a.out" 2>"$WORK/a.err"
n=$(grep -c "): first offender cuMemAlloc_v2" "$WORK/a.err")
[ "$n" -eq 1 ] && pass || { fail "the broken line was said $n times, wanted once"; sed 's/^/    | /' "$WORK/a.err" >&2; }
expect_in "$WORK/a.err" "capguard: broken: pid " "said by the run summary, with the process"
# without capguard run the shim still says it itself
CAPGUARD_LOG=$WORK/b.jsonl LD_PRELOAD=$REAL_SHIM "$BREAKER_PROBE" --route dlsym --op alloc >"$WORK/b.out" 2>"$WORK/b.err"
n=$(grep -c "): first offender cuMemAlloc_v2" "$WORK/b.err")
[ "$n" -eq 1 ] && pass || { fail "plain LD_PRELOAD: the broken line said $n times, wanted once"; sed 's/^/    | /' "$WORK/b.err" >&2; }
finish
