#!/usr/bin/env bash
# Durations come from the monotonic clock; the wall clock gives only labels
# (docs/reliability.md). A preloaded wall clock (wall_clock_step.c) is
# stepped by +1 h, then by -1 h, inside the first of three captures of 5 ms
# each: the capture time (the summary record, run's line, the metrics file)
# stays milliseconds, the slowest capture too, each capture record's end
# stays after its begin, and the first replay's gauge is kept.
. "$(dirname "$0")/lib.sh"
use_real_shim
for step in 3600 -3600; do
  m=$WORK/m$step
  mkdir -p "$m"
  LD_PRELOAD=$WALL_CLOCK_STEP "$CAPGUARD" run --metrics "$m" --log "$WORK/s$step.jsonl" \
    -- "$METRICS_PROBE" clockstep $step >"$WORK/s$step.out" 2>"$WORK/s$step.err"
  rc=$?
  expect_rc 0 "clockstep $step"
  expect_in "$WORK/s$step.out" "clockstep: 3 captures, wall clock stepped" "the probe ran ($step)"
  python3 - "$WORK/s$step.jsonl" "$m" <<'PY' && pass || fail "wall clock stepped $step s: a duration followed it (above)"
import glob, json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in recs if r["type"] == "summary"]
caps = [r for r in recs if r["type"] == "capture"]
assert len(s) == 1 and len(caps) == 3, (len(s), len(caps))
s = s[0]
assert 0.012e9 < s["capture_ns"] < 1e9, s["capture_ns"]
assert s["slowest"][0]["ns"] < 1e9, s["slowest"]
for c in caps:
    assert 0.004e9 < c["end_ns"] - c["begin_ns"] < 1e9, c
assert "first_replay_ns" in s and 0 < s["first_replay_ns"] - s["first_capture_ns"] < 5e9, s
text = open(glob.glob(f"{sys.argv[2]}/capguard_*.prom")[0]).read()
total = float(re.search(r"^capguard_capture_seconds_total\{.*\} (\S+)$", text, re.M).group(1))
assert 0.012 < total < 1, total
m = re.search(r"^capguard_first_replay_seconds\{.*\} (\S+)$", text, re.M)
assert m and 0 < float(m.group(1)) < 5, text
PY
  grep -qE "capguard: capture: 3 graphs in [0-9]+ ms \(slowest [0-9]+ ms " "$WORK/s$step.err" && pass \
    || fail "run's line, wall clock stepped $step s: $(grep 'capture:' "$WORK/s$step.err")"
done
finish
