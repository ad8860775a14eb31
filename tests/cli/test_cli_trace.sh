#!/usr/bin/env bash
# capguard report --trace FILE: a Chrome/Perfetto trace-event JSON, checked the
# way Perfetto's JSON importer reads it: an object with "traceEvents", each
# event with a known "ph", "ts" in microseconds, integer "pid"/"tid"; complete
# events ("X") with a "dur"; instants ("i") with a scope; metadata ("M") naming
# processes. One span per capture, one instant per call during capture, with
# the times of the log.
. "$(dirname "$0")/lib.sh"
t=$WORK/trace.json
run_cg trace report --all --trace "$t" "$DATA/run1.jsonl" "$DATA/run2.jsonl"
expect_rc 1 "--trace keeps the exit status of the findings"
[ -s "$t" ] && pass || fail "--trace wrote nothing"
python3 - "$t" "$DATA/run1.jsonl" "$DATA/run2.jsonl" <<'PY' >"$WORK/check" 2>&1 && pass || fail "trace: $(cat "$WORK/check")"
import json, sys
trace = json.load(open(sys.argv[1]))
logs = [json.loads(l) for f in sys.argv[2:] for l in open(f) if l.strip()]
# the importer takes {"traceEvents": [...]} (or a bare array)
assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), "no traceEvents list"
known = set("BEXiIMCbnesftPOND")
spans, instants, names = [], [], {}
for e in trace["traceEvents"]:
    assert isinstance(e, dict), e
    assert e.get("ph") in known, f"unknown ph: {e}"
    assert isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), f"pid/tid not int: {e}"
    if e["ph"] == "M":
        assert e["name"] in ("process_name", "thread_name") and isinstance(e["args"]["name"], str), e
        names[e["pid"]] = e["args"]["name"]
        continue
    assert isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, f"bad ts: {e}"
    assert isinstance(e.get("name"), str) and e["name"], e
    if e["ph"] == "X":
        assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, f"bad dur: {e}"
        spans.append(e)
    elif e["ph"] == "i":
        assert e.get("s") in ("g", "p", "t"), f"instant scope: {e}"
        instants.append(e)
caps = [o for o in logs if o.get("type") == "capture"]
evs = [o for o in logs if o.get("type") == "event" and o.get("v") == 1 and "pid" in o]
assert len(spans) == len(caps), f"{len(spans)} spans, {len(caps)} captures in the logs"
assert len(instants) == len(evs), f"{len(instants)} instants, {len(evs)} calls in the logs"
# every process that logged is a named track
assert set(names) == {o["pid"] for o in logs if o.get("type") == "process"}, names
# microseconds: a capture's dur is its (end - begin) in ns / 1000
# times from the first thing in the logs (a process's record, a capture's begin, a call)
t0 = min([c["begin_ns"] for c in caps] + [e["time_ns"] for e in evs] +
         [p["time_ns"] for p in logs if p.get("type") == "process"])
for c in caps:
    s = [x for x in spans if x["pid"] == c["pid"] and x["name"].startswith(f"capture {c['id']}")]
    assert len(s) == 1, (c, s)
    assert abs(s[0]["dur"] - (c["end_ns"] - c["begin_ns"]) / 1000) < 1, (c, s[0])
    assert abs(s[0]["ts"] - (c["begin_ns"] - t0) / 1000) < 1, (c, s[0])
    assert s[0]["args"]["broken"] == (c["status"] in ("failed", "invalidated") or
        any(e["pid"] == c["pid"] and e["capture"]["id"] == c["id"] and e["verdict"] in ("refused", "emulated") for e in evs)), c
for e in evs:
    i = [x for x in instants if x["pid"] == e["pid"] and abs(x["ts"] - (e["time_ns"] - t0) / 1000) < 1]
    assert i and i[0]["name"] == f'{e["call"]} {e["verdict"]}' and i[0]["tid"] == e["tid"], (e, i)
    assert i[0]["args"]["kernels"] == e.get("image", {}).get("kernels", []), i[0]
assert trace["otherData"]["capguard_epoch_ns"] == t0, trace["otherData"]
print("ok")
PY
# an unwritable path is a usage error, in one line
run_cg bad report --trace /nonexistent/dir/t.json "$DATA/run2.jsonl"
expect_rc 2 "--trace to an unwritable path"
expect_in "$WORK/bad.err" "capguard report: cannot write '/nonexistent/dir/t.json'" "unwritable trace named"
finish
