#!/usr/bin/env bash
# Loads during capture made with options, under guard mode emulating 12.2.
# Options capguard can reproduce (a JIT option; CU_LIBRARY_BINARY_IS_PRESERVED,
# as the CUDA runtime's lazy loading passes it) are recorded with the image,
# and the next run is served a copy preloaded with the same options: nothing
# tells the user to change the program. An option it cannot reproduce (a host
# table in the program's memory) is never served nor recorded, and the words
# name it. A load whose options differ from those recorded is said, with
# what differs, and recorded for the next run.
. "$(dirname "$0")/lib.sh"
use_real_shim

run12() { # NAME PRIME LOADER...: capguard run on emulated 12.2, with a log
  local name=$1 prime=$2; shift 2
  FAKECUDA_LOADS="$WORK/$name.loads" "$CAPGUARD" run --emulate-driver 12020 --log "$WORK/$name.jsonl" \
    --prime "$prime" -- "$VLLM_LIKE" --worker 0 "$@" "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/$name.err"
}

# --- a JIT option: recorded with it, served the next run, no advice to change the program
run12 j1 "$WORK/j.cgp" --library-options; rc=$?
expect_rc 1 "run 1: the load with a JIT option breaks the capture under emulated 12.2"
"$CAPGUARD" prime list "$WORK/j.cgp" >"$WORK/jlist.out" 2>&1
expect_in "$WORK/jlist.out" "CU_JIT_MAX_REGISTERS=64" "prime list shows the options it was recorded with"
expect_in "$WORK/j1.err" "capguard: next: run it again" "next: says run it again"
expect_not_in "$WORK/j1.err" "make it before capture" "next: does not tell the user to change the program"
expect_not_in "$WORK/j1.err" "CUDA_MODULE_LOADING" "no CUDA_MODULE_LOADING advice"
run12 j2 "$WORK/j.cgp" --library-options; rc=$?
expect_rc 0 "run 2: the load with a JIT option is served and the capture holds"
grep '"event":"module-load"' "$WORK/j2.jsonl" | grep -q '"verdict":"served"' && pass || fail "run 2's load not served"
grep -q 'options=jit:0=64' "$WORK/j2.loads" && pass || fail "the preload was not made with the option: $(cat "$WORK/j2.loads")"

# --- binary-is-preserved, as the runtime's lazy loads: the same
run12 p1 "$WORK/p.cgp" --library-preserved; rc=$?
expect_rc 1 "run 1: the runtime-like load breaks the capture"
run12 p2 "$WORK/p.cgp" --library-preserved; rc=$?
expect_rc 0 "run 2: the runtime-like load is served"
grep -q 'cuLibraryLoadData handle=.* options=lib:1=1' "$WORK/p2.loads" && pass \
  || fail "the preload was not made with CU_LIBRARY_BINARY_IS_PRESERVED: $(cat "$WORK/p2.loads")"

# --- an option capguard cannot reproduce: never recorded, and named
run12 f "$WORK/f.cgp" --foreign-options; rc=$?
expect_rc 1 "the load with a host table breaks the capture under emulated 12.2"
[ ! -e "$WORK/f.cgp" ] && pass || fail "a load with a host table was recorded: $("$CAPGUARD" prime list "$WORK/f.cgp" 2>&1)"
grep '"event":"module-load"' "$WORK/f.jsonl" | grep -q '"options_not_reproducible":"CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE"' \
  && pass || fail "the event does not name the option: $(grep '"event":"module-load"' "$WORK/f.jsonl")"
expect_in "$WORK/f.err" "capguard: next: the 1 load during capture passed CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, which capguard cannot reproduce and so never serves nor records (nothing was recorded for the next run): make it before capture begins" "next: names the option"
expect_not_in "$WORK/f.err" "check the priming file" "next: does not send the operator to the priming file"
expect_not_in "$WORK/f.err" "prime learn" "no faster: learning, which would not record the load either"
run_cg rep report "$WORK/f.jsonl"
expect_in "$WORK/rep.out" "passed CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, which capguard cannot reproduce" "the report names the option"
expect_not_in "$WORK/rep.out" "let capguard prime" "the report does not offer priming for a load it never records"
run_cg repj report --json "$WORK/f.jsonl"
python3 - "$WORK/repj.out" <<'PY' && pass || fail "report --json: no loads-with-options finding, or totals.loads_with_options is not 1"
import json, sys
d = json.load(open(sys.argv[1]))
f = [x["finding"] for x in d["findings"]]
assert "loads-with-options" in f, f
assert d["totals"]["loads_with_options"] == 1, d["totals"]
assert any("CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE" in a for a in d["advice"]), d["advice"]
PY
run_cg reph report --html "$WORK/f.html" "$WORK/f.jsonl"
expect_in "$WORK/f.html" "CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, which capguard cannot reproduce" "the HTML report names the option"

# --- one worker with a host table, another without options: next: says both
"$CAPGUARD" run --emulate-driver 12020 --log "$WORK/m.jsonl" --prime "$WORK/m.cgp" -- \
  "$VLLM_LIKE" --workers 1 --foreign-options "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/m.err"; rc=$?
expect_rc 1 "both workers' captures break"
expect_in "$WORK/m.err" "capguard: next: run it again; the 1 image loaded during capture, recorded in $WORK/m.cgp" "next: says what was recorded"
expect_in "$WORK/m.err" "; 1 load with CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE was not recorded (capguard cannot reproduce that option" "next: says the load with the host table was not"
run_cg mrep report "$WORK/m.jsonl"
expect_in "$WORK/mrep.out" "or let capguard prime them, all but the 1 load made with CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, which it cannot reproduce and never serves (warm that one up either way)" "the warm-up advice leaves out only the load it cannot serve"

# --- other options than recorded: not served, said with what differs, recorded for the next run
run12 d1 "$WORK/j.cgp" --library-preserved; rc=$?
expect_rc 1 "the same bytes with other options are not served"
grep '"event":"module-load"' "$WORK/d1.jsonl" | grep -q '"options_differ":"CU_JIT_MAX_REGISTERS recorded 64, not asked"' \
  && pass || fail "the event does not say what differs: $(grep '"event":"module-load"' "$WORK/d1.jsonl")"
expect_in "$WORK/d1.err" "not served: its options differ from those recorded for these bytes: CU_JIT_MAX_REGISTERS recorded 64, not asked" "stderr says what differs"
run_cg drep report "$WORK/d1.jsonl"
expect_in "$WORK/drep.out" "asked for other options than the priming file recorded for the same bytes (CU_JIT_MAX_REGISTERS recorded 64, not asked)" "the report says what differs"
run12 d2 "$WORK/j.cgp" --library-preserved; rc=$?
expect_rc 0 "the next run is served the copy recorded with its own options"

# --- the runtime's lazy load with its options (hand-written log: the fake driver has no runtime)
sed 's/"event":"module-load",/&"options":true,"load_options":"CU_LIBRARY_BINARY_IS_PRESERVED=1",/' "$DATA/runtime_lazy.jsonl" >"$WORK/lazy.jsonl"
run_cg lazy report "$WORK/lazy.jsonl"
expect_not_in "$WORK/lazy.out" "CUDA_MODULE_LOADING=EAGER" "no EAGER advice for a lazy load capguard serves"
expect_not_in "$WORK/lazy.out" "cannot prime" "the warm-up advice does not refuse priming"
expect_in "$WORK/lazy.out" "let capguard prime" "the warm-up advice offers priming"
# a log of a capguard before options were recorded ("options": true alone): never served, said so
sed 's/"event":"module-load",/&"options":true,/' "$DATA/runtime_lazy.jsonl" >"$WORK/old.jsonl"
run_cg old report "$WORK/old.jsonl"
expect_in "$WORK/old.out" "this capguard's log predates their recording" "an old log's load with options is said as never recorded"

# --- doctor on a driver that refuses loads during capture
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" doctor >"$WORK/doctor.out" 2>&1
expect_in "$WORK/doctor.out" "the CUDA runtime's lazy loads included" "doctor says loads with options are recorded"
expect_not_in "$WORK/doctor.out" "CUDA_MODULE_LOADING=EAGER" "doctor gives no EAGER advice"
finish
