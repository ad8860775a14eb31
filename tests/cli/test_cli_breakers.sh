#!/usr/bin/env bash
# End to end over the real shim and the fake driver (tests/routes/breaker_probe.c):
# calls that break captures on every driver, run under `capguard run`, and read
# back by `capguard report`. The run summary and the report name each broken
# capture's first offender as the shim logged it; a capture broken by a call
# capguard does not watch is said to be so, never pinned on a later call; a
# capture guard mode kept alive (a deferred free, a captured event's query
# answered not ready) is not listed as broken, and the fix is counted.
. "$(dirname "$0")/lib.sh"
use_real_shim
probe=("$BREAKER_PROBE" --route dlsym)

# --- an allocation breaks the capture, then a sync is refused too: the allocation is named
"$CAPGUARD" run --mode report --log "$WORK/a.jsonl" -- "${probe[@]}" --op alloc --then ctxsync \
  >"$WORK/a.out" 2>"$WORK/a.err"
rc=$?
expect_rc 0 "capguard run exits with the program's status"
expect_in "$WORK/a.err" "first offender cuMemAlloc_v2 at breaker_probe" "run summary: the first offender"
expect_in "$WORK/a.err" "(refused: 900 operation not permitted when stream is capturing" "run summary: what the driver said, in words"
expect_not_in "$WORK/a.err" "first offender cuCtxSynchronize" "the later call is not the offender"
run_cg ar report "$WORK/a.jsonl"
expect_rc 1 "report: a capture broke"
expect_in "$WORK/ar.out" "first offender cuMemAlloc_v2 at breaker_probe" "report: the first offender"
run_cg aj report --json "$WORK/a.jsonl"
if python3 - "$WORK/aj.out" <<'PY' >"$WORK/py.err" 2>&1; then pass; else fail "report --json: $(cat "$WORK/py.err")"; fi
import json, sys
r = json.load(open(sys.argv[1]))
caps = [c for p in r["processes"] for c in p.get("broken_captures", [])]
assert len(caps) == 1, caps
b = caps[0]["broken_by"]
assert b["call"] == "cuMemAlloc_v2" and b["result"] == 900 and b["event"] == "allocation", b
t = r["totals"]
assert t["other_calls"] == 0 and t["verdicts"]["other"] == 0, t
PY

# --- broken by a call capguard does not watch (the fake's test hook), then an allocation
"$CAPGUARD" run --mode report --log "$WORK/u.jsonl" -- "${probe[@]}" --op unwatched --then alloc \
  >"$WORK/u.out" 2>"$WORK/u.err"
expect_in "$WORK/u.err" "broken by a call capguard does not watch" "run summary: said plainly"
expect_not_in "$WORK/u.err" "first offender" "run summary: nothing guessed"
run_cg ur report "$WORK/u.jsonl"
expect_in "$WORK/ur.out" "broken by a call capguard does not watch (began at breaker_probe" "report: with where it began"
expect_not_in "$WORK/ur.out" "first offender" "report: the later allocation is not named"

# --- guard mode keeps the captures: a free deferred, a watchdog answered
"$CAPGUARD" run --log "$WORK/g.jsonl" -- "${probe[@]}" --op free --watchdog 10 >"$WORK/g.out" 2>"$WORK/g.err"
expect_in "$WORK/g.out" "end_result=0" "guard: the capture survives"
expect_in "$WORK/g.out" "polls_other=0" "guard: every poll answered not ready"
expect_not_in "$WORK/g.err" "first offender" "guard: nothing broke"
run_cg gr report "$WORK/g.jsonl"
expect_rc 0 "report: nothing broke"
expect_in "$WORK/gr.out" "deferred-free 1" "report: the deferred free counted"
expect_in "$WORK/gr.out" "not-ready" "report: the answered queries counted"
finish
