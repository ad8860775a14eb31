#!/usr/bin/env bash
# A load during capture made with JIT or library options (cuLibraryLoadData
# with a JIT option, as the CUDA runtime's lazy loading makes it) under guard
# mode emulating 12.2: refused, and never recorded (capguard never serves a
# load with options). The log's event says "options": true; run's next: and
# the report's advice (text, HTML, JSON) say why nothing was recorded, not
# "check the priming file" and doctor, which would find nothing wrong; with
# a load without options beside it, next: says both, and the report's
# warm-up advice says priming leaves the load with options out.
. "$(dirname "$0")/lib.sh"
use_real_shim

# --- the only load during capture had options: nothing recorded, and next: says why
"$CAPGUARD" run --emulate-driver 12020 --log "$WORK/o.jsonl" --prime "$WORK/o.cgp" -- \
  "$VLLM_LIKE" --worker 0 --library-options "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/o.err"; rc=$?
expect_rc 1 "the load with options breaks the capture under emulated 12.2"
[ ! -e "$WORK/o.cgp" ] && pass || fail "a load with options was recorded: $("$CAPGUARD" prime list "$WORK/o.cgp" 2>&1)"
grep '"event":"module-load"' "$WORK/o.jsonl" | grep -q '"options":true' && pass \
  || fail "the load's event does not say it had options: $(grep '"event":"module-load"' "$WORK/o.jsonl")"
expect_in "$WORK/o.err" "capguard: next: the 1 load during capture passed JIT or library options, which capguard never serves and so never records (nothing was recorded for the next run): make it before capture begins" "next: says the load had options"
expect_not_in "$WORK/o.err" "check the priming file" "next: does not send the operator to the priming file"
expect_not_in "$WORK/o.err" "doctor" "next: gives no doctor command"
expect_not_in "$WORK/o.err" "prime learn" "no faster: learning, which would not record the load either"
run_cg rep report "$WORK/o.jsonl"
expect_in "$WORK/rep.out" "the 1 load during capture passed JIT or library options, which capguard never serves and so never records" "the report's advice says the load had options"
expect_not_in "$WORK/rep.out" "let capguard prime" "the report does not offer priming for a load it never records"
expect_not_in "$WORK/rep.out" "check the priming file" "the report does not send the operator to the priming file"
run_cg repj report --json "$WORK/o.jsonl"
python3 - "$WORK/repj.out" <<'PY' && pass || fail "report --json: no loads-with-options finding, or totals.loads_with_options is not 1"
import json, sys
d = json.load(open(sys.argv[1]))
f = [x["finding"] for x in d["findings"]]
assert "loads-with-options" in f, f
assert d["totals"]["loads_with_options"] == 1, d["totals"]
assert any("JIT or library options" in a for a in d["advice"]), d["advice"]
PY
run_cg reph report --html "$WORK/o.html" "$WORK/o.jsonl"
expect_in "$WORK/o.html" "passed JIT or library options" "the HTML report says the load had options"

# --- the same load made without options is recorded: the event has no "options"
"$CAPGUARD" run --emulate-driver 12020 --log "$WORK/n.jsonl" --prime "$WORK/n.cgp" -- \
  "$VLLM_LIKE" --worker 0 --library "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/n.err"; rc=$?
expect_rc 1 "the load without options breaks the capture under emulated 12.2"
[ -s "$WORK/n.cgp" ] && pass || fail "a load without options was not recorded"
expect_not_in "$WORK/n.jsonl" '"options"' "a load without options has no options key"
expect_not_in "$WORK/n.err" "JIT or library options" "next: says nothing of options for a load without"

# --- one worker loads with options, another without: next: says both
"$CAPGUARD" run --emulate-driver 12020 --log "$WORK/m.jsonl" --prime "$WORK/m.cgp" -- \
  "$VLLM_LIKE" --workers 1 --library-options "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/m.err"; rc=$?
expect_rc 1 "both workers' captures break"
expect_in "$WORK/m.err" "capguard: next: run it again; the 1 image loaded during capture, recorded in $WORK/m.cgp" "next: says what was recorded"
expect_in "$WORK/m.err" "; 1 load with JIT or library options was not recorded (capguard never serves such a load: make it before capture)" "next: says the load with options was not"
run_cg mrep report "$WORK/m.jsonl"
expect_in "$WORK/mrep.out" "or let capguard prime them, all but the 1 load made with JIT or library options, which it never serves (warm that one up either way): run the same command again" "the warm-up advice says priming leaves out the load with options"

# --- doctor on a driver that refuses loads during capture says such loads are never recorded
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" doctor >"$WORK/doctor.out" 2>&1
expect_in "$WORK/doctor.out" "a load with JIT or library options, as the CUDA runtime's lazy loading makes, is never recorded: CUDA_MODULE_LOADING=EAGER" "doctor says loads with options are never recorded"

# --- the runtime's lazy load with options (hand-written log: the fake driver has no runtime)
sed 's/"event":"module-load",/&"options":true,/' "$DATA/runtime_lazy.jsonl" >"$WORK/lazy.jsonl"
run_cg lazy report "$WORK/lazy.jsonl"
expect_in "$WORK/lazy.out" "the 1 load during capture passed JIT or library options (here the CUDA runtime's lazy loading), which capguard never serves and so never records" "the report says the runtime's lazy load had options"
expect_in "$WORK/lazy.out" "capguard cannot prime it, loaded with JIT or library options" "the warm-up advice offers no priming"
expect_lines <(grep -F "CUDA_MODULE_LOADING=EAGER capguard run" "$WORK/lazy.out") 1 "the command with CUDA_MODULE_LOADING=EAGER given once"
finish
