#!/usr/bin/env bash
# capguard report over hand-written logs (docs/log-format.md) from several
# processes and runs: text, --json, exit codes, malformed and newer lines.
. "$(dirname "$0")/lib.sh"

# --- one run, three processes (vLLM-like: api server + two workers), broken captures
run_cg r1 report "$DATA/run1.jsonl"
o=$WORK/r1.out
expect_rc 1 "report of a run with broken captures"
expect_in "$o" "1 log, 3 processes, 5 captures, 4 broken" "totals"
# the first call that broke pid 4101's capture 1 is the earlier one by time (written second)
expect_in "$o" "pid 4101 capture 1 (stream 0x5d1e00, global, broken; began vllm/worker/model_runner.py:1710 in capture)" "broken capture header"
grep -A2 "pid 4101 capture 1 " "$o" >"$WORK/c1"
expect_in "$WORK/c1" "first broken by cuModuleLoadData (module-load, refused, CUresult 900 operation not permitted when stream is capturing) at fla/ops/gated_delta_rule/chunk.py:210 in chunk_gated_delta_rule_fwd" "first breaking call by time"
expect_in "$WORK/c1" "kernels: _gdn_fwd_kernel, _gdn_chunk_kernel" "kernels of the first breaking call"
grep -A3 "pid 4101 capture 1 " "$o" >"$WORK/c1w"
expect_in "$WORK/c1w" "    why: the driver (CUDA 12.2) refused it: drivers before 12.3 refuse module loads during capture" "why, in words"
# a worker with no Python stack: the first native frame outside capguard and libcuda
grep -A1 "pid 4102 capture 1 " "$o" >"$WORK/c2"
expect_in "$WORK/c2" "at libtriton_launcher.so(load_binary+0x42)" "native call site fallback"
# a capture that failed with nothing logged
grep -A1 "pid 4101 capture 2 " "$o" >"$WORK/c3"
expect_in "$WORK/c3" "the log does not say which call broke it (an older capguard wrote it)" "silent broken capture of an older log: no offender claimed"
# an unload that broke a capture
grep -A1 "pid 4101 capture 3 " "$o" >"$WORK/c4"
expect_in "$WORK/c4" "first broken by cuModuleUnload (module-unload, refused" "unload breaks a capture"
expect_not_in "$o" "pid 4102 capture 2 " "a capture that ended is not broken"
# one word for a capture that did not survive
if sed -n '/^Broken captures/,/^$/p' "$o" | grep -q 'failed;\|invalid'; then fail "broken captures called failed or invalid"; else pass; fi
# kernels deduplicated with counts: _attn_fwd came from two processes
expect_in "$o" "      2       0  _attn_fwd" "deduplicated kernel count"
expect_in "$o" "      1       0  _gdn_fwd_kernel" "kernel count"
# the counts add up: calls by kind and by verdict, and site calls, all equal the calls
sums() { # sums FILE: "calls kinds verdicts sites"
  local f=$1
  local calls kinds verdicts sites
  calls=$(sed -n 's/^calls during capture: \([0-9]*\).*/\1/p' "$f")
  kinds=$(sed -n 's/^calls during capture: [0-9]* (\([^)]*\)).*/\1/p' "$f" | grep -o '[0-9]\+' | awk '{s += $1} END {print s + 0}')
  verdicts=$(sed -n 's/.*; verdicts: //p' "$f" | grep -o '[0-9]\+' | awk '{s += $1} END {print s + 0}')
  sites=$(sed -n '/^Call sites/,/^$/p' "$f" | awk 'NR > 2 && $1 ~ /^[0-9]+$/ {s += $1} END {print s + 0}')
  echo "$calls $kinds ${verdicts:-0} $sites"
}
read -r c k v st <<<"$(sums "$o")"
[ "$c" = 4 ] && [ "$k" = "$c" ] && [ "$v" = "$c" ] && [ "$st" = "$c" ] && pass || fail "counts do not add up: calls $c, by kind $k, by verdict $v, by site $st"
# call sites deduplicated: Python frame first
expect_in "$o" "      1  triton/compiler/compiler.py:385 in _init_handles  [cuModuleLoadData; kernels: _attn_fwd]" "python call site"
expect_in "$o" "      1  triton/compiler/compiler.py:470 in __del__  [cuModuleUnload]" "unload call site"
# advice
expect_in "$o" "warm these 3 kernels (" "warm-up advice"
sed -n 's/.*warm these 3 kernels (\([^)]*\)) up before capture.*/\1/p' "$o" | tr -d ' ' | tr , '\n' | sort >"$WORK/warm"
sed -n '/^Kernels loaded/,/^$/p' "$o" | awk 'NR > 2 && NF == 3 {print $3}' | sort >"$WORK/listed"
# the kernels named are those that broke a capture: each is among the kernels loaded during capture
[ -s "$WORK/warm" ] && [ -z "$(comm -23 "$WORK/warm" "$WORK/listed")" ] && pass || fail "advice names kernels not listed: $(cat "$WORK/warm")"
# one line a process: its command, mode, driver, captures and broken ones
expect_in "$o" "Processes (as logged)" "process section"
[ "$(sed -n '/^Processes/,/^$/p' "$o" | grep -c '^  pid ')" -eq 3 ] && pass || fail "3 process lines wanted"
# the exact command, from the top-level process's logged argv (report mode: guard is the default)
expect_in "$o" "run it in guard mode, which records the images and loads them before capture on the run after:" "guard-mode advice"
expect_in "$o" "      capguard run -- python3 -m vllm.entrypoints.openai.api_server --model m" "guard-mode advice: the command on its own line"
expect_in "$o" "1 module unload during capture" "unload advice"
expect_in "$o" "1 capture broke and the log does not say which call broke it (an older capguard wrote it" "silent capture advice"
if [ -s "$WORK/r1.err" ]; then fail "clean log produced stderr"; else pass; fi

# --- a later run where priming worked: nothing broke, exit 0
run_cg r2 report "$DATA/run2.jsonl"
expect_rc 0 "report of a run with nothing broken"
expect_in "$WORK/r2.out" "1 process, 1 capture, 0 broken" "run2 totals"
expect_in "$WORK/r2.out" "1 load during capture was served from the priming file" "served advice"
expect_in "$WORK/r2.out" "1 module load during capture was allowed by this driver" "allowed advice"
# "prime them before deploying there" is followed by the command that does it
grep -A1 "prime them before deploying there" "$WORK/r2.out" | tail -1 >"$WORK/r2-prime"
expect_in "$WORK/r2-prime" "      capguard prime learn -- python3 bench.py" "allowed advice: the command that primes them"
expect_in "$WORK/r2.out" "      1       0  _rms_norm" "allowed kernel listed"
expect_in "$WORK/r2.out" "      1       1  _attn_fwd" "served kernel counted as served"
expect_not_in "$WORK/r2.out" "warm th" "a served kernel needs no warming"
read -r c k v st <<<"$(sums "$WORK/r2.out")"
[ "$c" = 2 ] && [ "$k" = "$c" ] && [ "$v" = "$c" ] && [ "$st" = "$c" ] && pass || fail "run 2 counts do not add up: calls $c, by kind $k, by verdict $v, by site $st"

# --- several runs: each listed, the latest decides (run 2 was primed: exit 0), --all for every run
run_cg both report "$DATA/run1.jsonl" "$DATA/run2.jsonl"
expect_rc 0 "two runs, the latest worked"
expect_in "$WORK/both.out" "2 logs, 1 process, 1 capture, 0 broken" "the latest run's totals"
expect_in "$WORK/both.out" "    run 1: pid 4100 python3 -m vllm.entrypoints.openai.api_server --model m (3 processes): 5 captures, 4 broken" "run 1 listed"
expect_in "$WORK/both.out" "  > run 2: pid 5200 python3 bench.py (1 process): 1 capture, 0 broken, 1 load served from the priming file" "run 2 listed and reported"
expect_not_in "$WORK/both.out" "warm th" "advice of run 1 not mixed in"
# appended to one log, the runs are told apart too
cat "$DATA/run1.jsonl" "$DATA/run2.jsonl" >"$WORK/appended.jsonl"
run_cg app report "$WORK/appended.jsonl"
expect_rc 0 "one log, two runs: the latest worked"
expect_in "$WORK/app.out" "  > run 2: pid 5200" "runs of one log"
run_cg app-old report "$DATA/run2.jsonl" "$DATA/run1.jsonl"
expect_rc 0 "the latest by time (run 2), not by argument order"
run_cg bothall report --all "$DATA/run1.jsonl" "$DATA/run2.jsonl"
expect_rc 1 "--all: a broken capture in any run"
expect_in "$WORK/bothall.out" "2 logs, 4 processes, 6 captures, 4 broken" "two-log totals"
expect_in "$WORK/bothall.out" "pid 4101 (run1.jsonl) capture 1" "process labelled by log when several"
expect_in "$WORK/bothall.out" "Runs (all reported below)" "--all says so"
read -r c k v st <<<"$(sums "$WORK/bothall.out")"
[ "$c" = 6 ] && [ "$k" = "$c" ] && [ "$v" = "$c" ] && [ "$st" = "$c" ] && pass || fail "--all counts do not add up: calls $c, by kind $k, by verdict $v, by site $st"
# the advice's command is that of the run it is about: run 1 broke, not run 2
expect_in "$WORK/bothall.out" "      capguard run -- python3 -m vllm.entrypoints.openai.api_server --model m" "--all: warm-up advice names run 1's command"
expect_in "$WORK/bothall.out" "      capguard run --emulate-driver 12020 -- python3 bench.py" "--all: allowed-load advice names run 2's command"
# a kernel loaded in both runs: 2 loads, 1 of them served
expect_in "$WORK/bothall.out" "      3       1  _attn_fwd" "kernel over both runs"
# --all: each run's advice under its run, never one run's advice said of another
sed -n '/^What to do/,$p' "$WORK/bothall.out" >"$WORK/bothall-advice"
expect_in "$WORK/bothall-advice" "  run 1: pid 4100 python3 -m vllm.entrypoints.openai.api_server --model m" "--all: run 1's advice headed"
expect_in "$WORK/bothall-advice" "  run 2: pid 5200 python3 bench.py" "--all: run 2's advice headed"
sed -n '/^  run 1:/,/^  run 2:/p' "$WORK/bothall-advice" >"$WORK/run1-advice"
sed -n '/^  run 2:/,$p' "$WORK/bothall-advice" >"$WORK/run2-advice"
expect_in "$WORK/run1-advice" "warm these 3 kernels" "--all: the warm-up advice is run 1's"
expect_not_in "$WORK/run1-advice" "allowed by this driver" "--all: run 2's allowed loads not in run 1's advice"
expect_in "$WORK/run2-advice" "1 module load during capture was allowed by this driver" "--all: the allowed-load advice is run 2's"
expect_not_in "$WORK/run2-advice" "warm th" "--all: run 1's warm-up not in run 2's advice"
# --all over logs read in another order: the processes by run, then pid
cat "$DATA/run2.jsonl" "$DATA/run1.jsonl" >"$WORK/reversed.jsonl"
run_cg reversed report --all "$WORK/reversed.jsonl"
[ "$(sed -n '/^Processes/,/^$/p' "$WORK/reversed.out" | grep -o '^  pid [0-9]*' | awk '{print $2}' | tr '\n' ' ')" = "4100 4101 4102 5200 " ] && pass \
  || fail "--all: processes not sorted: $(sed -n '/^Processes/,/^$/p' "$WORK/reversed.out")"
# --html to a path that cannot be written: one line, said before any report is printed
run_cg badhtml report --html /nonexistent/x.html "$DATA/run2.jsonl"
expect_rc 2 "--html to a folder that does not exist"
[ ! -s "$WORK/badhtml.out" ] && pass || fail "--html to a bad path printed the report first: $(head -3 "$WORK/badhtml.out")"
expect_in "$WORK/badhtml.err" "capguard report: cannot write '/nonexistent/x.html': No such file or directory; pick a writable path for --html" "--html: the bad path named"
expect_lines "$WORK/badhtml.err" 1 "--html to a bad path: one line"
run_cg badtrace report --trace "$WORK" "$DATA/run2.jsonl"
expect_rc 2 "--trace to a directory"
[ ! -s "$WORK/badtrace.out" ] && pass || fail "--trace to a directory printed the report first"
"$CAPGUARD" report - <"$DATA/run2.jsonl" >"$WORK/stdin.out" 2>&1; rc=$?
expect_rc 0 "report from stdin"
expect_in "$WORK/stdin.out" "1 process, 1 capture, 0 broken" "stdin totals"
CAPGUARD_LOG=$DATA/run1.jsonl "$CAPGUARD" report >"$WORK/env.out" 2>&1 </dev/null; rc=$?
expect_rc 1 "report of \$CAPGUARD_LOG"
expect_in "$WORK/env.out" "5 captures, 4 broken" "CAPGUARD_LOG default"

# --- malformed lines: counted, reported in one line on stderr, not fatal
run_cg bad report "$DATA/malformed.jsonl"
# one kernel to warm: said in the singular
expect_in "$WORK/bad.out" "warm this kernel (vec_add) up before capture (run it once outside capture), or let capguard prime it:" "one kernel to warm, in the singular"
expect_rc 1 "malformed log still reports (its capture broke)"
expect_in "$WORK/bad.err" "capguard report: 4 malformed lines skipped (first: $DATA/malformed.jsonl:2: not JSON" "malformed count"
expect_in "$WORK/bad.err" "capguard report: 1 line of a newer log version ignored" "newer version line"
expect_lines "$WORK/bad.err" 2 "one line each for malformed and newer"
expect_in "$WORK/bad.out" "pid 6000 capture 1 (stream 0x2000, global, broken, open at exit; began main.c:10)" "capture known only from its event"
expect_in "$WORK/bad.out" "first broken by cuModuleLoadDataEx (module-load, emulated, CUresult 900 operation not permitted when stream is capturing) at a.out(main+0x20)" "emulated refusal"
expect_not_in "$WORK/bad.out" "capture 9" "newer-version event ignored"

# --- no capguard record: not an all-clear but the wrong input (exit 2)
: >"$WORK/empty.jsonl"
run_cg empty report "$WORK/empty.jsonl"
expect_rc 2 "empty log"
expect_in "$WORK/empty.err" "capguard report: not a capguard log: nothing in $WORK/empty.jsonl" "empty log named"
expect_not_in "$WORK/empty.out" "nothing to do" "no all-clear for an empty file"
head -c 3000 /bin/sh >"$WORK/random.bin"
run_cg random report "$WORK/random.bin"
expect_rc 2 "a binary file"
expect_in "$WORK/random.err" "not a capguard log: no capguard record in $WORK/random.bin (every line malformed)" "binary file"
printf '{"a":1}\n[1]\n' >"$WORK/json.jsonl"
run_cg json-not report "$WORK/json.jsonl"
expect_rc 2 "JSON that is not a capguard log"
"$CAPGUARD" report - </dev/null >"$WORK/stdin-empty.out" 2>"$WORK/stdin-empty.err"; rc=$?
expect_rc 2 "empty stdin"
expect_in "$WORK/stdin-empty.err" "not a capguard log: nothing in (stdin)" "empty stdin named"
# skipped malformed lines are counted in the verdict itself
expect_in "$WORK/bad.out" "4 malformed log lines skipped (first: $DATA/malformed.jsonl:2: not JSON" "malformed count in the report"

# --- a process whose log lost lines says so in its summary record: the report says it too
{ cat "$DATA/run2.jsonl" | sed 's/"log":"\/tmp\/run2.jsonl"}/"log":"\/tmp\/run2.jsonl","log_incomplete":true}/'; } >"$WORK/incomplete.jsonl"
grep -q '"log_incomplete":true' "$WORK/incomplete.jsonl" && pass || fail "test log without the flag"
run_cg inc report "$WORK/incomplete.jsonl"
expect_in "$WORK/inc.out" "the log is incomplete: a process could not write all its lines (full disk or I/O error); counts are lower bounds" "incomplete log said"
run_cg inc-json report --json "$WORK/incomplete.jsonl"
grep -q '"log_incomplete": true' "$WORK/inc-json.out" && pass || fail "--json: log_incomplete not true"

# --- control characters in log text never reach the terminal
printf '%s\n' '{"v":1,"type":"event","pid":8,"time_ns":1,"event":"module-load","call":"cuModuleLoadData\u001b[31m","verdict":"refused","capture":{"id":1,"began":"a\nb"},"image":{"kernels":["k\u0007"]}}' >"$WORK/ctl.jsonl"
run_cg ctl report "$WORK/ctl.jsonl"
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$WORK/ctl.out"; then fail "control characters in the text report"; else pass; fi
expect_in "$WORK/ctl.out" "cuModuleLoadData?[31m" "escape replaced"
expect_in "$WORK/ctl.out" "began a?b)" "newline replaced"

# --- --json: valid JSON with the same findings
run_cg j report --all --json "$DATA/run1.jsonl" "$DATA/malformed.jsonl"
expect_rc 1 "--json exit code"
if python3 -m json.tool "$WORK/j.out" >/dev/null 2>"$WORK/jt.err"; then pass; else fail "--json is not valid JSON: $(cat "$WORK/jt.err")"; fi
python3 - "$WORK/j.out" <<'PY' >"$WORK/jcheck" 2>&1 || fail "--json content: $(cat "$WORK/jcheck")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "capguard-report" and r["v"] == 1, r.get("schema")
assert r["totals"]["captures"] == 6, r["totals"]
assert r["totals"]["captures_broken"] == 5, r["totals"]
assert r["lines"]["malformed"] == 4 and r["lines"]["newer_version"] == 1 and r["lines"]["unknown_type"] == 1, r["lines"]
b = {(x["pid"], x["id"]): x for x in r["broken"]}
fc = b[(4101, 1)]["first_call"]
assert fc["call"] == "cuModuleLoadData" and fc["kernels"] == ["_gdn_fwd_kernel", "_gdn_chunk_kernel"], fc
assert fc["site"] == "fla/ops/gated_delta_rule/chunk.py:210 in chunk_gated_delta_rule_fwd", fc["site"]
assert b[(4101, 2)]["first_call"] is None
k = {x["name"]: x["loads"] for x in r["kernels"]}
assert k == {"_attn_fwd": 2, "_gdn_fwd_kernel": 1, "_gdn_chunk_kernel": 1, "vec_add": 1}, k
t = r["totals"]
assert t["calls_during_capture"] == t["module_load"] + t["module_unload"] + t["other_calls"], t
assert t["calls_during_capture"] == sum(t["verdicts"].values()), t
assert t["calls_during_capture"] == sum(s["count"] for s in r["sites"]), r["sites"]
assert [x["run"] for x in r["runs"]] == [1, 2] and all(x["reported"] for x in r["runs"]), r["runs"]
assert len({s["site"] for s in r["sites"]}) == len(r["sites"]), "sites not deduplicated"
# --all: each run's advice in its run, none merged at the top
assert "advice" not in r and any("warm these" in a for a in r["runs"][0]["advice"]), r["runs"][0]
print("ok")
PY
[ -s "$WORK/jcheck" ] && grep -qx ok "$WORK/jcheck" && pass
if command -v jq >/dev/null; then
  n=$(jq '.processes | length' "$WORK/j.out"); [ "$n" = 4 ] && pass || fail "jq: $n processes, wanted 4"
fi
finish
