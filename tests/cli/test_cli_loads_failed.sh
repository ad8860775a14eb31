#!/usr/bin/env bash
# Loads the driver fails during capture (an image built for sm_90 on an sm_80
# GPU: CUresult 209) are not recorded, and nothing may say otherwise: prime
# learn says its file is incomplete and why (exit 1), not that "the file
# already held every load"; capguard run's next: names the failed load, not
# "check the priming file" (doctor finds the file sound); the report's advice
# is not empty. Over the fake driver (FAKECUDA_SM=80), with the real shim.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_SM=80
app=("$VLLM_LIKE" --workers 1 "$CUBIN" cg_test_fill)

"$CAPGUARD" prime learn --log "$WORK/learn.jsonl" --prime "$WORK/p.cgp" -- "${app[@]}" >"$WORK/learn.out" 2>&1; rc=$?
expect_rc 1 "learn whose loads failed: incomplete"
expect_not_in "$WORK/learn.out" "the file already held every load" "learn: not 'the file already held every load'"
expect_in "$WORK/learn.out" "  nothing new: 2 loads during capture failed, and a load that fails is not recorded" "learn: why nothing is new"
expect_in "$WORK/learn.out" "capguard prime learn: incomplete: 2 loads during capture failed (first cuModuleLoadData" "learn: the verdict"
expect_in "$WORK/learn.out" "CUresult 209 no kernel image is available for execution on the device" "learn: the driver's error"
expect_in "$WORK/learn.out" "its image is built for sm_90, this GPU is sm_80" "learn: both architectures"

"$CAPGUARD" run -q --log "$WORK/run.jsonl" --prime "$WORK/r.cgp" -- "${app[@]}" >"$WORK/run.out" 2>&1; rc=$?
expect_in "$WORK/run.out" "capguard: next: 2 calls during capture failed: the driver returned an error, which capguard passed to the program (first cuModuleLoadData" "run: next: the failed loads"
expect_not_in "$WORK/run.out" "check the priming file" "run: not sent to check a sound priming file"

run_cg rep report "$WORK/run.jsonl"
sed -n '/^What to do/,$p' "$WORK/rep.out" >"$WORK/rep.advice"
expect_in "$WORK/rep.advice" "  - 2 calls during capture failed: the driver returned an error" "report: the advice is not empty"
expect_in "$WORK/rep.advice" "a load that fails is not recorded, so priming cannot serve it: its image is built for sm_90, this GPU is sm_80" "report: why it was not recorded"
run_cg repj report --json "$WORK/run.jsonl"
python3 -c 'import json,sys; f=[x["finding"] for x in json.load(open(sys.argv[1]))["findings"]]; assert f == ["calls-failed"], f' "$WORK/repj.out" \
  && pass || fail "report --json: findings are not [calls-failed]: $(head -c 300 "$WORK/repj.out")"
finish
