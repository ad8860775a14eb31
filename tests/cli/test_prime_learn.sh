#!/usr/bin/env bash
# Priming that converges on an engine start-up, over the real shim and the fake
# driver: startup_like.c captures ten graphs largest first with 2 worker
# processes sharing one priming file; its kernels are first used in captures
# 0, 2, 3 (a library), 5 (the bytes of capture 2's image again) and 8.
#   - prime learn on the 13.0 driver records everything in one run;
#   - the 12.2 driver with that file captures all ten on its first run, no
#     call refused, no load reaching the driver during capture;
#   - prime check passes with it and names what is missing without it;
#   - on the 12.2 driver alone, with a fresh file, it takes one run per
#     breaking load (printed), and each failed run says how to go faster;
#   - with --rescue, one run;
#   - the arch rule: a file learned on sm_90 is not served on sm_80, and the
#     summary says so; prime merge of two archs keeps both.
. "$(dirname "$0")/lib.sh"
use_real_shim
app=("$STARTUP_LIKE" --workers 2)
PRIME=$WORK/learned.cgp

# no_loads_in_capture TRACE WHAT: the fake driver's trace shows no loader call during capture
no_loads_in_capture() {
  if grep -E '^cu(ModuleLoad|LibraryLoad)[A-Za-z]* .* capturing=[1-9]' "$1" >"$WORK/bad-loads"; then
    fail "$2: loads reached the driver during capture:"; sed 's/^/    | /' "$WORK/bad-loads" >&2
  else pass; fi
}

# --- learn on the 13.0 driver: one run records every load, with its count
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$PRIME" --log "$WORK/learn.jsonl" -- "${app[@]}" \
  >"$WORK/learn.out" 2>"$WORK/learn.err"; rc=$?
expect_rc 0 "prime learn on 13.0"
expect_in "$WORK/learn.out" "startup: 0 of 2 workers failed" "learn: the command ran as it does without capguard"
# Two workers share the file: what one records the other may already be served
# (the way a fleet shares it), so allowed + served is what is fixed.
expect_in "$WORK/learn.err" "capguard prime learn: 10 loads during capture in 2 processes (" "learn: what it saw"
expect_in "$WORK/learn.err" "capguard prime learn: recorded into $PRIME:" "learn names the file"
for k in "1 module  k_a  (new)" "2 modules  k_b  (new)" "1 library  k_l1, k_l2  (new)" "1 module  k_d  (new)"; do
  expect_in "$WORK/learn.err" "$k" "learn lists the image: $k"
done
expect_in "$WORK/learn.err" "ptx     sm_80" "learn lists kind and arch"
expect_in "$WORK/learn.err" "the file holds 4 images" "learn: 4 distinct images"
expect_in "$WORK/learn.err" "capguard prime learn: next:" "learn: what next"
expect_in "$WORK/learn.err" "  check it as a driver before 12.3 would use it:" "learn: what next, in words"
expect_in "$WORK/learn.err" "    capguard prime check --prime $PRIME -- $STARTUP_LIKE --workers 2" "learn: exact next command, on its own line"
# verdicts on stderr: stdout is the command's own output alone
expect_not_in "$WORK/learn.out" "capguard" "learn: nothing of capguard's on stdout"
expect_not_in "$WORK/learn.err" "capguard: cuModuleLoadData during capture" "learn prints no per-load blocks"
n=$(grep -cE '"verdict":"(allowed|served)"' "$WORK/learn.jsonl"); [ "$n" -eq 10 ] && pass || fail "learn: $n loads logged, wanted 10"
# learning again changes nothing: every load is served, nothing new recorded
cp "$PRIME" "$WORK/before-relearn.cgp"
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$PRIME" -- "${app[@]}" >"$WORK/relearn.out" 2>&1; rc=$?
expect_rc 0 "learn again"
expect_in "$WORK/relearn.out" "(10 served from the file)" "learn again: all served"
expect_in "$WORK/relearn.out" "nothing new: the file already held every load" "learn again: nothing new"

# --- the 12.2 driver with the learned file: all ten captured on the first run
FAKECUDA_DRIVER_VERSION=12020 FAKECUDA_TRACE=$WORK/trace122 "$CAPGUARD" run --prime "$PRIME" --log "$WORK/r122.jsonl" \
  -- "${app[@]}" >"$WORK/r122.out" 2>"$WORK/r122.err"; rc=$?
expect_rc 0 "12.2 driver with the learned file"
n=$(grep -c "captured 10 of 10 sizes; every replay ran" "$WORK/r122.out"); [ "$n" -eq 2 ] && pass || fail "12.2: $n of 2 workers captured all ten"
n=$(grep -c '"verdict":"served"' "$WORK/r122.jsonl"); [ "$n" -eq 10 ] && pass || fail "12.2: $n served loads, wanted 10"
if grep -qE '"verdict":"(refused|emulated|failed|allowed)"' "$WORK/r122.jsonl"; then fail "12.2: a load was not served"; else pass; fi
grep -q 'result=900' "$WORK/trace122" && fail "12.2: the driver refused a call" || pass
no_loads_in_capture "$WORK/trace122" "12.2 with the learned file"
expect_in "$WORK/r122.err" "capguard: 2 processes used CUDA, 20 captures, 0 broken" "12.2: run summary"

# --- prime check: passes with the file, on a driver that allows loads too (emulated 12.2)
cp "$PRIME" "$WORK/before-check.cgp"
for drv in 13000 12020; do
  FAKECUDA_DRIVER_VERSION=$drv "$CAPGUARD" prime check --prime "$PRIME" -- "${app[@]}" >"$WORK/check$drv.out" 2>&1; rc=$?
  expect_rc 0 "prime check on $drv"
  expect_in "$WORK/check$drv.out" "capguard prime check: ok: all 10 loads during capture in 2 processes served from $PRIME" "check $drv: ok line"
done
cmp -s "$PRIME" "$WORK/before-check.cgp" && pass || fail "prime check changed the priming file"
# without k_d's image it fails and names what is missing, and still writes nothing
cp "$PRIME" "$WORK/no-d.cgp"
hd=$("$CAPGUARD" prime list "$WORK/no-d.cgp" | awk '/ k_d$/ {print $1}')
[ -n "$hd" ] && pass || fail "prime list shows k_d"
"$CAPGUARD" prime rm "$hd" "$WORK/no-d.cgp" >/dev/null 2>&1
cp "$WORK/no-d.cgp" "$WORK/no-d-before.cgp"
mkdir "$WORK/tmp"
FAKECUDA_DRIVER_VERSION=13000 TMPDIR=$WORK/tmp "$CAPGUARD" prime check --prime "$WORK/no-d.cgp" -- "${app[@]}" >"$WORK/check-miss.out" 2>&1; rc=$?
expect_rc 1 "prime check with an image missing"
# the image both workers loaded: listed once, with both pids
[ "$(grep -c 'kernels: k_d' "$WORK/check-miss.out")" -eq 1 ] && pass || fail "check lists k_d's image more than once"
expect_in "$WORK/check-miss.out" "k_d  at startup_like" "check: where k_d was loaded"
grep -q 'kernels: k_d .*(pids [0-9]*, [0-9]*)$' "$WORK/check-miss.out" && pass || fail "check: k_d's image without its two pids"
# four workers that loaded one image: one line, their pids in order
: >"$WORK/empty.cgp"
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime check --prime "$WORK/empty.cgp" -- "$VLLM_LIKE" --workers 3 "$CUBIN" cg_test_fill >"$WORK/check-four.out" 2>&1
grep -o '(pids [0-9, ]*)$' "$WORK/check-four.out" | tr -dc '0-9 \n' | tr ' ' '\n' | grep . >"$WORK/check-four.pids"
[ "$(wc -l <"$WORK/check-four.pids")" -eq 4 ] && sort -n -c "$WORK/check-four.pids" 2>/dev/null && pass \
  || fail "check: the four workers' pids not listed once, in order: $(grep -o '(pids .*' "$WORK/check-four.out")"
# its temporary log is kept, and said to be temporary; a check that passes leaves none
t=$(ls "$WORK/tmp")
[ "$(echo "$t" | grep -c .)" -eq 1 ] && pass || fail "failed check: $(echo "$t" | grep -c .) files in TMPDIR, wanted its one log"
expect_in "$WORK/check-miss.out" "capguard prime check: the run's log: $WORK/tmp/$t (a temporary file, kept for the command below: delete it when done)" "failed check: its temporary log named as such"
rm -f "$WORK/tmp/"*
FAKECUDA_DRIVER_VERSION=13000 TMPDIR=$WORK/tmp "$CAPGUARD" prime learn --prime "$WORK/tmp-learn.cgp" -- "${app[@]}" >/dev/null 2>&1; rc=$?
expect_rc 0 "learn on 13.0"
FAKECUDA_DRIVER_VERSION=13000 TMPDIR=$WORK/tmp "$CAPGUARD" prime check --prime "$WORK/tmp-learn.cgp" -- "${app[@]}" >/dev/null 2>&1; rc=$?
expect_rc 0 "check of what was learned"
[ -z "$(ls "$WORK/tmp")" ] && pass || fail "a learn and a check that passed left files in TMPDIR: $(ls "$WORK/tmp")"
expect_in "$WORK/check-miss.out" "capguard prime check: FAIL: 2 loads during capture reached the driver; $WORK/no-d.cgp lacks them:" "check names the count"
expect_in "$WORK/check-miss.out" "kernels: k_d" "check names the missing kernel"
expect_in "$WORK/check-miss.out" "capguard prime learn --prime $WORK/no-d.cgp -- $STARTUP_LIKE --workers 2" "check says how to learn it"
cmp -s "$WORK/no-d.cgp" "$WORK/no-d-before.cgp" && pass || fail "a failed check wrote to the priming file"
# an old file with only one load of k_b: the second specialisation is missing
"$CAPGUARD" prime check --prime "$WORK/nothing.cgp" -- "${app[@]}" >"$WORK/check-empty.out" 2>&1; rc=$?
expect_rc 2 "prime check with no priming file: nothing to check"
expect_in "$WORK/check-empty.out" "capguard prime check: priming file $WORK/nothing.cgp does not exist: nothing to check" "the missing file named"
expect_not_in "$WORK/check-empty.out" "lacks" "no engine run, no claim that the file lacks a load"
[ -e "$WORK/nothing.cgp" ] && fail "prime check created a priming file" || pass

# --- the 12.2 driver alone, fresh file: one run per breaking load (one worker,
# so that no worker profits within a run from what another recorded)
FRESH=$WORK/fresh.cgp
runs=0; converged=0
while [ $runs -lt 12 ]; do
  runs=$((runs + 1))
  FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --prime "$FRESH" --log "$WORK/conv$runs.jsonl" -- "$STARTUP_LIKE" \
    >"$WORK/conv$runs.out" 2>"$WORK/conv$runs.err"; rc=$?
  if [ $rc -eq 0 ]; then converged=1; break; fi
  expect_in "$WORK/conv$runs.err" "capguard: faster: each process stopped at its first refused load (a framework such as Triton raises there), so each run on a driver that refuses loads during capture (before 12.3, or emulated) learns one load: as many runs as loads" "failed run $runs says how to go faster, as it happens: one load a run"
  expect_in "$WORK/conv$runs.err" "    capguard prime learn --prime $FRESH -- $STARTUP_LIKE" "failed run $runs names prime learn"
  expect_in "$WORK/conv$runs.err" "capguard run --log $WORK/conv$runs.jsonl --rescue --prime $FRESH -- $STARTUP_LIKE" "failed run $runs names --rescue"
done
# run 2: k_a served, k_b recorded: the one kernel recorded, no "..." after it
expect_in "$WORK/conv2.err" "recorded in $FRESH (kernels k_b), will be loaded before capture" "run 2 names the one kernel it recorded, with no '...' after it"
# the HTML report's why is ended before what the capture's end returned
"$CAPGUARD" report --html "$WORK/conv2.html" "$WORK/conv2.jsonl" >/dev/null 2>&1
expect_in "$WORK/conv2.html" "refuse module loads during capture; <br>its end returned 901" "HTML: a separator between the why and the end's result"
# run 4: k_b served, then the same bytes loaded again while the first copy was loaded: said so
expect_in "$WORK/conv4.err" "capguard: next: run it again; the file already held the image loaded during capture (kernels k_b), but the run loaded the same bytes again while a copy was still loaded" "run 4 says the file needed another copy of an image it held"
echo "12.2 fake driver alone, fresh priming file: all ten captures after $runs runs ($((runs - 1)) failed)"
[ $converged -eq 1 ] && pass || fail "12.2 alone never converged in 12 runs"
# k_a, k_b, the library, k_b's second load, k_d: five loads break one run each
[ $runs -eq 6 ] && pass || fail "12.2 alone took $runs runs, wanted 6 (5 breaking loads + 1)"
expect_not_in "$WORK/conv$runs.err" "capguard: faster:" "the good run gives no convergence advice"
grep -q '"call":"cuModuleLoadDataEx","verdict":"refused"' "$WORK/conv4.jsonl" && pass || fail "run 4 broke at k_b's second load"
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" prime check --prime "$FRESH" -- "${app[@]}" >/dev/null 2>&1; rc=$?
expect_rc 0 "the converged file passes prime check"
# prime list shows the copies each image needs: k_b twice, k_a once
"$CAPGUARD" prime list "$FRESH" >"$WORK/fresh-list.out" 2>&1
[ "$(awk '$NF == "k_b" {print $5}' "$WORK/fresh-list.out")" = 2 ] && pass || fail "prime list: k_b's copies not 2: $(cat "$WORK/fresh-list.out")"
[ "$(awk '$NF == "k_a" {print $5}' "$WORK/fresh-list.out")" = 1 ] && pass || fail "prime list: k_a's copies not 1: $(cat "$WORK/fresh-list.out")"
"$CAPGUARD" prime list --help >"$WORK/list-help.out" 2>&1
expect_in "$WORK/list-help.out" "  hits    how often processes needed the image during capture" "prime list --help explains hits"
expect_in "$WORK/list-help.out" "  copies  how many copies of the image the next run preloads" "prime list --help explains copies"

# --- --rescue: one run on the 12.2 driver
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --rescue --prime "$WORK/rescue.cgp" --log "$WORK/rescue.jsonl" \
  -- "${app[@]}" >"$WORK/rescue.out" 2>"$WORK/rescue.err"; rc=$?
expect_rc 0 "12.2 with --rescue: one run"
n=$(grep -cE '"verdict":"(rescued|served)"' "$WORK/rescue.jsonl"); [ "$n" -eq 10 ] && pass || fail "rescue: $n rescued or served loads, wanted 10"
grep -q '"verdict":"rescued"' "$WORK/rescue.jsonl" && pass || fail "rescue: nothing rescued"
echo "12.2 fake driver with --rescue: all ten captures after 1 run"

# --- learn on a driver that refuses loads: it says so and never pretends
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" prime learn --prime "$WORK/old.cgp" -- "${app[@]}" >"$WORK/learn-old.out" 2>&1; rc=$?
expect_rc 1 "learn on a 12.2 driver is incomplete"
expect_in "$WORK/learn-old.out" "capguard prime learn: incomplete: this driver (12.2) refuses module loads during capture, so this run learned only the loads up to the capture that broke" "learn on 12.2 says so"
expect_in "$WORK/learn-old.out" "Learn on a machine with driver 12.3 or newer and the same GPU architecture (sm_90)" "learn names the arch"
expect_in "$WORK/learn-old.out" "capguard run --rescue --prime $WORK/old.cgp -- $STARTUP_LIKE --workers 2" "learn points to --rescue"
expect_not_in "$WORK/learn-old.out" "next: check it" "learn on 12.2 does not claim success"
CAPGUARD_EMULATE_DRIVER=12020 FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$WORK/emu.cgp" -- "${app[@]}" \
  >"$WORK/learn-emu.out" 2>"$WORK/learn-emu.err"; rc=$?
expect_rc 0 "learn ignores CAPGUARD_EMULATE_DRIVER"
expect_in "$WORK/learn-emu.err" "CAPGUARD_EMULATE_DRIVER is ignored while learning" "learn says it ignores emulation"

# --- the arch rule: learned on sm_90, not served on sm_80; merged files keep both
sm80=$SOURCE_ROOT/tests/data/kernels_sm80.cubin
FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$WORK/sm90.cgp" -- "$VLLM_LIKE" --workers 1 "$CUBIN" cg_test_fill >/dev/null 2>&1; rc=$?
expect_rc 0 "learn the sm_90 cubin"
FAKECUDA_SM=80 FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --prime "$WORK/sm90.cgp" --log "$WORK/on80.jsonl" \
  -- "$VLLM_LIKE" --workers 1 "$sm80" cg_test_fill >/dev/null 2>"$WORK/on80.err"; rc=$?
expect_rc 1 "an sm_90 file does not serve an sm_80 start-up"
expect_in "$WORK/on80.err" "capguard: note: 1 priming record was not used: built for sm_90, this device is sm_80; learn the priming file on this GPU architecture" "run summary names the arch mismatch"
grep -q '"primed_skipped_arch":1,"skipped_sm":90' "$WORK/on80.jsonl" && pass || fail "log: skipped for arch"
grep -q '"device_sm":80' "$WORK/on80.jsonl" && pass || fail "log: device arch"
run_cg on80-report report "$WORK/on80.jsonl"
expect_in "$WORK/on80-report.out" "1 priming record was not used: built for sm_90, this device is sm_80" "report names the arch mismatch"
FAKECUDA_SM=80 FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$WORK/sm80.cgp" -- "$VLLM_LIKE" --workers 1 "$sm80" cg_test_fill >"$WORK/l80.out" 2>&1; rc=$?
expect_rc 0 "learn the sm_80 cubin on sm_80"
expect_in "$WORK/l80.out" "cubin   sm_80" "learned on sm_80"
run_cg merge prime merge "$WORK/fleet.cgp" "$WORK/sm90.cgp" "$WORK/sm80.cgp"
expect_rc 0 "prime merge of two archs"
run_cg fleet-list prime list "$WORK/fleet.cgp"
expect_in "$WORK/fleet-list.out" "sm_90" "merged file keeps sm_90"
expect_in "$WORK/fleet-list.out" "sm_80" "merged file keeps sm_80"
for sm in 80 90; do
  img=$CUBIN; [ $sm = 80 ] && img=$sm80
  FAKECUDA_SM=$sm FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" prime check --prime "$WORK/fleet.cgp" -- "$VLLM_LIKE" --workers 1 "$img" cg_test_fill >"$WORK/fleet$sm.out" 2>&1; rc=$?
  expect_rc 0 "the merged fleet file serves sm_$sm"
done
finish
