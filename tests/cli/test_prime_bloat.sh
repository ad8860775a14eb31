#!/usr/bin/env bash
# Attack 10 of docs/reliability.md: a load count in the priming file is the most copies
# alive at once during capture, not the number of loads. 2,000 captures that
# each load one image and unload it (the unload deferred to the capture's
# end) make the file ask for 1 copy; the next run on 12.2 preloads 1 copy
# before its first capture (not 2,000), loads a served copy again after the
# program unloaded it, and every capture is served. Two copies alive at once
# still ask for 2 (startup_like's k_b, checked in test_prime_learn.sh).
. "$(dirname "$0")/lib.sh"
use_real_shim
P=$WORK/bloat.cgp
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" run --prime "$P" --log "$WORK/learn.jsonl" -- "$ATTACK_FILES" load-unload 2000 \
  >"$WORK/learn.out" 2>&1; rc=$?
expect_rc 0 "2000 load-and-unload captures on 13.0"
h=$("$CAPGUARD" prime list "$P" | awk '/ k_x$/ {print $1}')
"$CAPGUARD" prime show "$h" "$P" >"$WORK/show.out" 2>&1
expect_in "$WORK/show.out" "copies:       1 module, 0 libraries" "the file asks for 1 copy"

FAKECUDA_DRIVER_VERSION=12020 FAKECUDA_TRACE=$WORK/trace "$CAPGUARD" run --prime "$P" --log "$WORK/run.jsonl" \
  -- "$ATTACK_FILES" load-unload 2000 >"$WORK/run.out" 2>&1; rc=$?
expect_rc 0 "2000 captures on 12.2 with the file"
expect_in "$WORK/run.out" "attack_files: 2000 load-and-unload captures ended" "every capture ended"
n=$(grep -c '"verdict":"served"' "$WORK/run.jsonl"); [ "$n" -eq 2000 ] && pass || fail "$n of 2000 loads served"
# copies loaded before the first capture began: 1, not 2,000
n=$(awk '/^cuStreamBeginCapture/ {exit} /^cuModuleLoadData/ {n++} END {print n+0}' "$WORK/trace")
[ "$n" -eq 1 ] && pass || fail "$n copies preloaded before the first begin, wanted 1"
if grep -E '^cu(ModuleLoad|LibraryLoad)[A-Za-z]* .* capturing=[1-9]' "$WORK/trace" >/dev/null; then
  fail "a load reached the driver during capture"
else pass; fi
# at the end nothing is left over: every served copy was unloaded by the program
grep -q '"type":"summary".*"primed_unused":0' "$WORK/run.jsonl" && pass || fail "copies left unused"
finish
