#!/usr/bin/env bash
# A read-only fleet file (CAPGUARD_PRIME_READONLY=1, the README's recipe)
# that lacks the image, or was built for sm_80 on an sm_90 GPU: the summary
# says read-only, what is missing and both architectures, and where to add
# the images (its prime learn command works); capguard doctor --prime says
# read-only and shows the GPU's architecture and the file's. The fake driver
# reports the compute capability FAKECUDA_SM (90 unless told).
. "$(dirname "$0")/lib.sh"
use_real_shim
C80=$SOURCE_ROOT/tests/data/kernels_sm80.cubin
# the fleet's file, learned on an sm_80 machine
FAKECUDA_SM=80 "$CAPGUARD" run -q --emulate-driver 12020 --prime "$WORK/fleet.cgp" -- \
  "$DEMO_ENGINE" "$C80" cg_test_fill >/dev/null 2>&1
"$CAPGUARD" prime list "$WORK/fleet.cgp" >"$WORK/list.out" 2>&1
expect_in "$WORK/list.out" "sm_80" "the fleet file holds an sm_80 image"
before=$(sha256sum <"$WORK/fleet.cgp")

# --- on sm_90, read-only
CAPGUARD_PRIME_READONLY=1 run_cg ro run -q --emulate-driver 12020 --prime "$WORK/fleet.cgp" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill
expect_rc 1 "the capture breaks: the file has no sm_90 image"
expect_in "$WORK/ro.err" "capguard: next: the priming file $WORK/fleet.cgp is read-only (CAPGUARD_PRIME_READONLY=1) and lacks the 1 image loaded during capture (kernels cg_test_axpy, cg_test_fill), so nothing was recorded; its 1 record is built for sm_80, this GPU is sm_90" "read-only, what is missing, both architectures"
expect_not_in "$WORK/ro.err" "nothing was recorded for the next run" "not the dead end"
expect_in "$WORK/ro.err" "    capguard prime learn --prime $WORK/fleet.cgp -- $DEMO_ENGINE $CUBIN cg_test_fill" "where to add them"
expect_in "$WORK/ro.err" "    capguard doctor --prime $WORK/fleet.cgp" "then check it"
[ "$(sha256sum <"$WORK/fleet.cgp")" = "$before" ] && pass || fail "a read-only file was written"

# --- doctor --prime, read-only
CAPGUARD_PRIME_READONLY=1 run_cg doctor doctor --prime "$WORK/fleet.cgp"
expect_rc 1 "doctor finds the problem"
expect_in "$WORK/doctor.out" "ok      GPUs: 1 (device 0: sm_90)" "doctor shows the GPU's architecture"
expect_in "$WORK/doctor.out" "priming file: $WORK/fleet.cgp: 1 image (sm_80), intact, read-only (CAPGUARD_PRIME_READONLY=1)" "doctor shows the file's architecture, read-only"
expect_in "$WORK/doctor.out" "PROBLEM priming file: its one image is built for sm_80, this GPU is sm_90" "doctor: nothing can be served"
expect_not_in "$WORK/doctor.out" "no problem found" "doctor does not say all is well"
# writable, the same file: a note, not a problem (the next run records sm_90)
run_cg doctor-rw doctor --prime "$WORK/fleet.cgp"
expect_in "$WORK/doctor-rw.out" "note    priming file: 1 of 1 image built for another architecture (sm_80; this GPU is sm_90)" "doctor: the other architecture noted"

# --- read-only and missing
# refused before the command starts, as doctor flags it: nothing could be served
CAPGUARD_PRIME_READONLY=1 run_cg missing run -q --emulate-driver 12020 --prime "$WORK/none.cgp" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill
expect_rc 2 "a missing read-only file is refused up front"
expect_in "$WORK/missing.err" "capguard run: priming file $WORK/none.cgp does not exist, and CAPGUARD_PRIME_READONLY=1 keeps the shim from creating it" "a missing read-only file"
expect_not_in "$WORK/missing.out" "engine:" "the command never started"
expect_not_in "$WORK/missing.err" "prime learn" "no advice to learn onto the read-only path"
CAPGUARD_PRIME_READONLY=1 CAPGUARD_PRIME=$WORK/none.cgp run_cg missing-doctor doctor
expect_in "$WORK/missing-doctor.out" "PROBLEM priming file: $WORK/none.cgp does not exist, and CAPGUARD_PRIME_READONLY=1 keeps the shim from creating it" "doctor: missing and read-only"

# --- the advice works: learned where written, the read-only run is served
"$CAPGUARD" prime learn --prime "$WORK/fleet.cgp" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>&1
CAPGUARD_PRIME_READONLY=1 run_cg served run -q --emulate-driver 12020 --prime "$WORK/fleet.cgp" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill
expect_rc 0 "after prime learn, the read-only run captures"
expect_in "$WORK/served.err" "priming worked" "served"
finish
