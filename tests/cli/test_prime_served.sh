#!/usr/bin/env bash
# Attack 5 of docs/reliability.md: a served image counts as needed. Over the real shim and
# the fake driver, with startup_like (4 images, 5 loads during capture):
#   learn on 13.0; age every record to 40 days; a run on 12.2 is served from
#   the file; prune --older-than 30 then keeps every image (the served run
#   refreshed them), and the next run on 12.2 captures all ten sizes, no
#   load reaching the driver during capture.
# Refreshing is cheap: one hit record per image and process (not per load,
# not per capture), nothing when the file is only read (prime check).
. "$(dirname "$0")/lib.sh"
use_real_shim
P=$WORK/p.cgp
hits() { "$CAPGUARD" prime verify "$P" 2>&1 | sed -n 's/.*images, \([0-9]*\) hit updates.*/\1/p'; }

FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$P" -- "$STARTUP_LIKE" >"$WORK/learn.out" 2>&1; rc=$?
expect_rc 0 "learn on 13.0"
expect_in "$WORK/learn.out" "the file holds 4 images" "learned 4 images"
"$PRIME_FIXTURE" --age "$P" 40; rc=$?
expect_rc 0 "age the records"
before=$(hits)

# --- a run served from the file
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --prime "$P" --log "$WORK/served.jsonl" -- "$STARTUP_LIKE" \
  >"$WORK/served.out" 2>"$WORK/served.err"; rc=$?
expect_rc 0 "12.2, served from the file"
n=$(grep -c '"verdict":"served"' "$WORK/served.jsonl"); [ "$n" -eq 5 ] && pass || fail "$n loads served, wanted 5"
after=$(hits)
[ "$after" -eq $((before + 4)) ] && pass || fail "the served run wrote $((after - before)) hit records, wanted 4 (one per image)"

# prime check reads and never writes
cp "$P" "$WORK/before-check.cgp"
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" prime check --prime "$P" -- "$STARTUP_LIKE" >/dev/null 2>&1; rc=$?
expect_rc 0 "prime check"
cmp -s "$P" "$WORK/before-check.cgp" && pass || fail "prime check wrote to the priming file"

# --- prune keeps what a run within the window was served
"$CAPGUARD" prime prune --older-than 30 "$P" >"$WORK/prune.out" 2>&1; rc=$?
expect_rc 0 "prune --older-than 30"
"$CAPGUARD" prime list "$P" >"$WORK/list.out" 2>&1
for k in k_a k_b k_l1,k_l2 k_d; do expect_in "$WORK/list.out" "$k" "prune kept $k"; done
# (the served run's hits were folded in: last needed is today)
expect_in "$WORK/list.out" "$(date -u +%Y-%m-%d)" "last needed today"

# --- the next run on 12.2 captures everything
FAKECUDA_DRIVER_VERSION=12020 FAKECUDA_TRACE=$WORK/trace "$CAPGUARD" run --prime "$P" --log "$WORK/after.jsonl" \
  -- "$STARTUP_LIKE" >"$WORK/after.out" 2>"$WORK/after.err"; rc=$?
expect_rc 0 "12.2 after prune"
expect_in "$WORK/after.out" "captured 10 of 10 sizes; every replay ran" "all ten captured"
if grep -E '^cu(ModuleLoad|LibraryLoad)[A-Za-z]* .* capturing=[1-9]' "$WORK/trace" >/dev/null; then
  fail "a load reached the driver during capture"
else pass; fi

# --- without the refresh, the same prune drops them all (what the attack saw):
# an aged file nobody was served from
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$WORK/unused.cgp" -- "$STARTUP_LIKE" >/dev/null 2>&1
P=$WORK/unused.cgp
"$PRIME_FIXTURE" --age "$P" 40
"$CAPGUARD" prime prune --older-than 30 "$P" >/dev/null 2>&1
"$CAPGUARD" prime list "$P" >"$WORK/unused.out" 2>&1
expect_not_in "$WORK/unused.out" "k_a" "an image no run needed within the window is pruned"
finish
