#!/usr/bin/env bash
# capguard report --all --json over a log of two runs (capguard run twice over
# the fake driver, into one log): each run carries its own headline, pids
# (sorted), advice and findings, and one run's advice is never said of the
# other (the document has no advice of all the runs merged); the processes
# are listed by run, then pid, whatever order the lines were read in.
. "$(dirname "$0")/lib.sh"
use_real_shim
app=("$VLLM_LIKE" --workers 2 "$CUBIN" cg_test_fill)
# run 1: an old driver refuses the loads (warm-up advice, priming file p1);
# run 2: CUDA 13.0 allows them (prime-them-before-deploying advice, file p2)
"$CAPGUARD" run -q --emulate-driver 12020 --log "$WORK/two.jsonl" --prime "$WORK/p1.cgp" -- "${app[@]}" \
  >"$WORK/run1.out" 2>&1; rc=$?
expect_rc 1 "run 1 breaks"
"$CAPGUARD" run -q --log "$WORK/two.jsonl" --prime "$WORK/p2.cgp" -- "${app[@]}" >"$WORK/run2.out" 2>&1; rc=$?
expect_rc 0 "run 2 captures"

run_cg all report --all --json "$WORK/two.jsonl"
expect_rc 1 "a capture broke in run 1"
python3 - "$WORK/all.out" "$WORK" >"$WORK/all.check" 2>&1 <<'PY' && pass || fail "--all --json: $(cat "$WORK/all.check")"
import json, sys
d, work = json.load(open(sys.argv[1])), sys.argv[2]
runs = d["runs"]
assert len(runs) == 2, runs
assert "advice" not in d and "findings" not in d, "the runs' advice merged at the top: %r" % d.get("advice")
r1, r2 = runs
for r in runs:
    for key in ("headline", "pids", "advice", "findings", "ended_without_exit_record", "processes_with_cuda"):
        assert key in r, (key, r)
    assert r["pids"] == sorted(r["pids"]) and len(r["pids"]) == r["processes"], r
    assert len(r["advice"]) == len(r["findings"]) > 0, r
    assert r["headline"].startswith("run %d: pid %d vllm_like --workers 2 " % (r["run"], r["pid"])), r["headline"]
    assert r["processes_with_cuda"] == 3 and r["ended_without_exit_record"] == 0, r
assert r1["headline"].endswith(": 3 captures, 3 broken"), r1["headline"]
assert r2["headline"].endswith(": 3 captures, 0 broken"), r2["headline"]
a1, a2 = " ".join(r1["advice"]), " ".join(r2["advice"])
assert "warm these 2 kernels" in a1 and work + "/p1.cgp" in a1, a1
assert "allowed by this driver" not in a1 and work + "/p2.cgp" not in a1, "run 2's advice under run 1: " + a1
assert "allowed by this driver" in a2 and work + "/p2.cgp" in a2, a2
assert "warm th" not in a2 and work + "/p1.cgp" not in a2, "run 1's advice under run 2: " + a2
f1 = {f["finding"] for f in r1["findings"]}
f2 = {f["finding"] for f in r2["findings"]}
assert "warm-up" in f1 and "warm-up" not in f2, (f1, f2)
# the processes: by run, then pid, each with its run
key = [(p["run"], p["pid"]) for p in d["processes"]]
assert key == sorted(key), key
assert [p["pid"] for p in d["processes"] if p["run"] == 1] == r1["pids"], (key, r1["pids"])
PY

# the latest run alone (no --all): its advice at the top, as before
run_cg latest report --json "$WORK/two.jsonl"
python3 - "$WORK/latest.out" >"$WORK/latest.check" 2>&1 <<'PY' && pass || fail "--json of the latest run: $(cat "$WORK/latest.check")"
import json, sys
d = json.load(open(sys.argv[1]))
assert any("allowed by this driver" in a for a in d["advice"]), d["advice"]
assert not any("warm th" in a for a in d["advice"]), d["advice"]
assert [r["reported"] for r in d["runs"]] == [False, True], d["runs"]
PY

# lines read in another order (run 2's first, then run 1's, each process's
# lines kept together, highest pid first): the processes still by run, then
# pid, in JSON and in text
python3 - "$WORK/two.jsonl" >"$WORK/reversed.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
recs = [json.loads(l) for l in lines]
runs = []
for r in recs:
    if r.get("run") and r["run"] not in runs:
        runs.append(r["run"])
run_of = {r["pid"]: r["run"] for r in recs if r.get("run")}
for run in reversed(runs):
    for pid in sorted({p for p, x in run_of.items() if x == run}, reverse=True):
        for l, r in zip(lines, recs):
            if r["pid"] == pid:
                print(l)
PY
run_cg rev report --all --json "$WORK/reversed.jsonl"
python3 - "$WORK/rev.out" >"$WORK/rev.check" 2>&1 <<'PY' && pass || fail "--all --json over reversed lines: $(cat "$WORK/rev.check")"
import json, sys
d = json.load(open(sys.argv[1]))
key = [(p["run"], p["pid"]) for p in d["processes"]]
# each run: the engine and its 3 workers (the shell that starts one writes nothing: it never uses CUDA)
assert len(key) == 8 and key == sorted(key), key
for r in d["runs"]:
    assert r["pids"] == sorted(r["pids"]), r["pids"]
PY
run_cg revt report --all "$WORK/reversed.jsonl"
sed -n '/^Processes/,/^$/p' "$WORK/revt.out" | grep -o '^  pid [0-9]*' | awk '{print $2}' >"$WORK/revt.pids"
[ -s "$WORK/revt.pids" ] && sort -c -n "$WORK/revt.pids" 2>/dev/null && pass || fail "text --all: processes not by pid: $(tr '\n' ' ' <"$WORK/revt.pids")"
finish
