#!/usr/bin/env bash
# The log's words are one table (capguard/log_schema.h), written by the shim and
# read by the command: the start and process records the real shim writes read
# back through capguard's reader (report --json shows the process, its mode
# and its command line), and the reports list verdicts in the table's order,
# which the shim's own summary record shows (its "verdicts" object is written
# by looping over the table).
. "$(dirname "$0")/lib.sh"
use_real_shim
engine=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)

# --- a CUDA process (start + process records) and a process without CUDA (start only)
"$CAPGUARD" run --log "$WORK/s.jsonl" --emulate-driver 12020 -- "${engine[@]}" >"$WORK/s.out" 2>"$WORK/s.err"
"$CAPGUARD" run --mode report --log "$WORK/s.jsonl" -- sh -c 'exit 0' >"$WORK/sh.out" 2>"$WORK/sh.err"
run_cg rj report --all --json "$WORK/s.jsonl"
if python3 - "$WORK/rj.out" "$WORK/s.jsonl" <<'PY' >"$WORK/py.err" 2>&1; then pass; else fail "records read back: $(cat "$WORK/py.err")"; fi
import json, os, sys
report = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
starts = [l for l in lines if l["type"] == "start"]
procs = [l for l in lines if l["type"] == "process"]
assert len(procs) == 1 and len(starts) >= 2, (len(procs), len(starts))
engine = next(p for p in report["processes"] if p["pid"] == procs[0]["pid"])
assert engine["mode"] == "guard" and engine["mode"] == procs[0]["mode"], engine
assert engine["argv"] == procs[0]["argv"] and os.path.basename(engine["argv"][0]) == "demo_engine", engine
assert engine["driver_version"] == procs[0]["driver_version"] == 13000, engine
assert engine["emulate_driver"] == 12020, engine
shell = [p for p in report["processes"] if p["pid"] != procs[0]["pid"]]
assert any(p["mode"] == "report" and p["argv"][:2] == ["sh", "-c"] for p in shell), shell
# the reader knows every word the shim wrote: none counted as "other"
t = report["totals"]
assert t["other_calls"] == 0 and t["verdicts"]["other"] == 0, t
PY

# --- the table's order, as the shim writes it: the summary's "verdicts" keys
order=$(python3 -c '
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if "\"summary\"" in l][0]
print(" ".join(s["verdicts"]))' "$WORK/s.jsonl")
[ "$(echo "$order" | wc -w)" -ge 7 ] && pass || fail "summary verdicts: '$order'"

# A log with one call of every verdict, written in the reverse order.
python3 - "$order" >"$WORK/all.jsonl" <<'PY'
import json, sys
verdicts = sys.argv[1].split()
print(json.dumps({"v": 1, "type": "process", "pid": 9, "ppid": 1, "time_ns": 1000, "mode": "guard",
                  "argv": ["engine"], "driver_version": 12020, "emulate_driver": 0}))
for i, v in enumerate(reversed(verdicts)):
    print(json.dumps({"v": 1, "type": "event", "pid": 9, "time_ns": 2000 + i, "event": "module-load",
                      "call": "cuModuleLoadData", "verdict": v, "result": 0, "tid": 9,
                      "capture": {"id": 1, "stream": "0x1", "mode": "global", "tid": 9, "status": "active"}}))
PY
run_cg all report "$WORK/all.jsonl"
listed=$(sed -n 's/.*; verdicts: //p' "$WORK/all.out" | sed 's/ [0-9]*,\? */ /g; s/ *$//')
[ "$listed" = "$order" ] && pass || fail "report lists verdicts '$listed', the table's order is '$order'"
run_cg allj report --json "$WORK/all.jsonl"
json_order=$(python3 -c '
import json, sys
print(" ".join(k for k in json.load(open(sys.argv[1]))["totals"]["verdicts"] if k != "other"))' "$WORK/allj.out")
[ "$json_order" = "$order" ] && pass || fail "report --json verdicts '$json_order', the table's order is '$order'"
run_cg allh report --html "$WORK/all.html" "$WORK/all.jsonl"
legend=$(grep -o 'call [a-z-]*</span>' "$WORK/all.html" | sed 's/call //; s/<.*//' | tr '\n' ' ' | sed 's/ *$//')
[ "$legend" = "$order" ] && pass || fail "report --html legend '$legend', the table's order is '$order'"
finish
