#!/usr/bin/env bash
# "Run it again" only when the next run will not break again: a capture
# broken by a refused load and a refused cuMemAlloc gets the image recorded,
# but the advice says the allocation breaks it again and what to do (make it
# outside the capture, or --rescue); and that is so: run 2, served, breaks on
# the allocation, and the --rescue command given captures. Over the fake
# driver (emulating 12.2), with the real shim.
. "$(dirname "$0")/lib.sh"
use_real_shim
host() { # host NAME [options]
  local name=$1; shift
  "$CAPGUARD" run -q --emulate-driver 12020 --log "$WORK/$name.jsonl" --prime "$WORK/p.cgp" "$@" -- \
    "$DYING_HOST" alloc "$CUBIN" cg_test_fill >"$WORK/$name.out" 2>"$WORK/$name.err"; rc=$?
}
host run1
expect_rc 1 "run 1 breaks"
expect_not_in "$WORK/run1.err" "next: run it again" "not told to run it again"
expect_in "$WORK/run1.err" "capguard: next: the 1 image loaded during capture was recorded in $WORK/p.cgp, but a run again would break again: 1 other call broke the capture (first cuMemAlloc_v2, allocation, pid" "the allocation breaks it again"
expect_in "$WORK/run1.err" "make it before the capture begins or after it ends" "what to do"
expect_in "$WORK/run1.err" "  or capture in one run, each refused load and allocation made in relaxed mode:" "the rescue lead"
expect_in "$WORK/run1.err" "    capguard run --log $WORK/run1.jsonl -q --rescue --prime $WORK/p.cgp --emulate-driver 12020 -- $DYING_HOST alloc $CUBIN cg_test_fill" "the rescue command"
# no faster: block: learning every load would not save the capture, and the
# rescue command is said once
expect_not_in "$WORK/run1.err" "capguard: faster:" "no faster: block when another call breaks the capture too"
[ "$(grep -c -- ' --rescue ' "$WORK/run1.err")" -eq 1 ] && pass || fail "the rescue command said $(grep -c -- ' --rescue ' "$WORK/run1.err") times"
# the report of run 1 says so too, next to its warm-up advice (priming serves loads only)
run_cg report1 report "$WORK/run1.jsonl"
expect_in "$WORK/report1.out" "  - priming alone will not do: 1 other call broke the capture too (first cuMemAlloc_v2, allocation, pid " "report: the allocation breaks it again"
expect_in "$WORK/report1.out" "so the run after priming breaks on it again: make it before the capture begins or after it ends" "report: what to do"
expect_in "$WORK/report1.out" "        capguard run --rescue --prime $WORK/p.cgp --emulate-driver 12020 -- $DYING_HOST alloc $CUBIN cg_test_fill" "report: the rescue command"
# what it says is true: run 2 is served and breaks on the allocation
host run2
expect_rc 1 "run 2 breaks again"
grep -q '"call":"cuModuleLoadData","verdict":"served"' "$WORK/run2.jsonl" && pass || fail "run 2: the load was not served"
grep -q '"call":"cuMemAlloc_v2","verdict":"refused"' "$WORK/run2.jsonl" && pass || fail "run 2: the allocation was not refused"
# ...and the rescue command captures
host run3 --rescue
expect_rc 0 "the --rescue command captures"
finish
