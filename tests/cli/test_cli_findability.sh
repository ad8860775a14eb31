#!/usr/bin/env bash
# What a reader needs is found where they look: the README links the docs on
# stale pointers, hangs and failures; run has --hang beside CAPGUARD_HANG_S
# (and its --help says both); prime show and verify find capguard run's own
# file for a program in prime.d/, as prime list does.
. "$(dirname "$0")/lib.sh"
readme=$SOURCE_ROOT/README.md
for doc in docs/stale.md docs/hangs.md docs/when-it-goes-wrong.md; do
  expect_in "$readme" "]($doc)" "README links $doc"
done
"$CAPGUARD" run --help >"$WORK/help" 2>&1
expect_in "$WORK/help" "--hang SECONDS" "run --help: --hang"
expect_in "$WORK/help" "CAPGUARD_HANG_S" "run --help: CAPGUARD_HANG_S"
export CAPGUARD_SHIM=$FAKE_SHIM
"$CAPGUARD" run -q --hang 7 -- sh -c 'echo "hang=$CAPGUARD_HANG_S"' >"$WORK/hang.out" 2>"$WORK/hang.err"
expect_in "$WORK/hang.out" "hang=7" "--hang N sets CAPGUARD_HANG_S for the command"
run_cg hang-bad run --hang 0 -- true
expect_rc 2 "--hang 0 refused"
expect_in "$WORK/hang-bad.err" "--hang needs a number of seconds from 1 to 86400, not '0'" "said why"
CAPGUARD_HANG_S=x run_cg hang-over run -q --hang 3 -- true
expect_rc 0 "--hang replaces a bad CAPGUARD_HANG_S, as the other options do"

# --- prime show and verify fall back to prime.d/ as list does
unset CAPGUARD_SHIM CAPGUARD_PRIME
export XDG_CACHE_HOME=$WORK/cache
mkdir -p "$WORK/cache/capguard/prime.d"
"$PRIME_FIXTURE" "$WORK/cache/capguard/prime.d/engine.cgp" 7 4096 >/dev/null 2>&1 || fail "prime_fixture"
run_cg list prime list
expect_rc 0 "list finds prime.d/engine.cgp"
hash=$(awk 'NR == 2 {print $1}' "$WORK/list.out")
[ -n "$hash" ] && pass || fail "no record listed: $(cat "$WORK/list.out" "$WORK/list.err")"
run_cg show prime show "$hash"
expect_rc 0 "show finds it too"
expect_in "$WORK/show.out" "hash:         $hash" "show: the record"
expect_in "$WORK/show.err" "showing from $WORK/cache/capguard/prime.d/engine.cgp" "show says which file"
run_cg verify prime verify
expect_rc 0 "verify finds it too"
expect_in "$WORK/verify.out" "$WORK/cache/capguard/prime.d/engine.cgp: " "verify: that file"
expect_in "$WORK/verify.err" "verifying $WORK/cache/capguard/prime.d/engine.cgp" "verify says which file"
finish
