#!/usr/bin/env bash
# capguard run with the real shim (build/shim) over the fake driver (tests/fakecuda,
# CUDA 13.0 unless told): every option reaches the command and the processes it
# execs, as the shim's behaviour shows; an existing LD_PRELOAD is kept;
# --emulate-driver 12020 makes the demo engine's run 1 break and run 2 work;
# --rescue makes run 1 work. (test_cli_run.sh covers the same with a stand-in shim.)
. "$(dirname "$0")/lib.sh"
use_real_shim
engine=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)
mkdir -p "$WORK/rel" "$WORK/elsewhere"

# --- every option, seen by a shell and by the engine it execs (a child of capguard's child)
cd "$WORK"
"$CAPGUARD" run --mode report --log "$WORK/env.jsonl" --prime rel/p.cgp --emulate-driver 12020 -- \
  sh -c 'env | grep -E "^CAPGUARD_[A-Z_]*=" | sort; cd elsewhere; exec "$@"' sh "${engine[@]}" \
  >"$WORK/env.out" 2>"$WORK/env.err"; rc=$?
cd - >/dev/null
expect_in "$WORK/env.out" "CAPGUARD_MODE=report" "--mode in the environment"
expect_in "$WORK/env.out" "CAPGUARD_LOG=$WORK/env.jsonl" "--log in the environment"
expect_in "$WORK/env.out" "CAPGUARD_PRIME=$WORK/rel/p.cgp" "--prime made absolute"
expect_in "$WORK/env.out" "CAPGUARD_EMULATE_DRIVER=12020" "--emulate-driver in the environment"
# (--rescue with report mode is refused: test_cli_operator.sh; its variable: test_cli_run.sh)
# ...and what the shim in the exec'd engine made of them
grep '"type":"process"' "$WORK/env.jsonl" | grep -q '"mode":"report","driver_version":13000,"emulate_driver":12020' \
  && pass || fail "engine's process record: mode report, driver 13000, emulating 12020: $(grep '"type":"process"' "$WORK/env.jsonl")"
# report mode neither rescues nor records: the emulated refusal breaks the capture
expect_rc 1 "report mode with --emulate-driver: the engine breaks"
grep -q '"call":"cuModuleLoadData","verdict":"emulated","result":900' "$WORK/env.jsonl" && pass || fail "emulated refusal logged"
[ -e "$WORK/rel/p.cgp" ] && fail "report mode recorded a priming file" || pass
expect_in "$WORK/env.err" "capguard refused it the way CUDA 12.2 would (--emulate-driver 12020)" "summary says the refusal was emulated"

# --- guard mode, --emulate-driver 12020 on the 13.0 fake: run 1 breaks, run 2 is primed
run_em() { # run_em NAME EXTRA-OPTIONS...
  local name=$1; shift
  "$CAPGUARD" run --log "$WORK/$name.jsonl" "$@" -- "${engine[@]}" >"$WORK/$name.out" 2>"$WORK/$name.err"; rc=$?
}
run_em em1 --prime "$WORK/em.cgp" --emulate-driver 12020
expect_rc 1 "emulated 12.2: run 1 breaks"
expect_in "$WORK/em1.err" "engine: CUDA graph capture failed" "the engine saw the broken capture"
expect_in "$WORK/em1.err" "capguard: 1 process used CUDA, 1 capture, 1 broken" "run 1 summary"
# the next command repeats the emulation, so that run 2 is the same experiment
expect_in "$WORK/em1.err" "capguard: next: run it again; the 1 image loaded during capture, recorded in $WORK/em.cgp (kernels cg_test_axpy, cg_test_fill), will be loaded before capture:" "run 1 advice"
expect_in "$WORK/em1.err" "  capguard run --log $WORK/em1.jsonl --prime $WORK/em.cgp --emulate-driver 12020 -- ${engine[*]}" "run 1 advice: the command"
[ -s "$WORK/em.cgp" ] && pass || fail "run 1 recorded nothing into --prime"
# the native call site, with its source line from the engine's debug info (libdw)
if readelf -S "$DEMO_ENGINE" 2>/dev/null | grep -q '\.debug_line'; then
  line=$(grep -n 'CUresult r = load(&jit, image);' "$SOURCE_ROOT/tools/demo/demo_engine.c" | cut -d: -f1)
  run_cg em1-report report "$WORK/em1.jsonl"
  grep -qE "^ +1  demo_engine\(main\+0x[0-9a-f]+\) at demo_engine\.c:$line  \[cuModuleLoadData" "$WORK/em1-report.out" \
    && pass || fail "call site without demo_engine.c:$line: $(sed -n '/^Call sites/,/^$/p' "$WORK/em1-report.out")"
else
  echo "note: demo_engine has no debug info (a release build): file:line not checked"
fi
run_em em2 --prime "$WORK/em.cgp" --emulate-driver 12020
expect_rc 0 "emulated 12.2: run 2 primed"
grep -q '"verdict":"served"' "$WORK/em2.jsonl" && pass || fail "run 2: load served"
# without --emulate-driver the 13.0 fake allows the load: it works, and the report says where it would not
run_em new --prime "$WORK/new.cgp"
expect_rc 0 "driver 13.0 allows loads during capture"
run_cg new-report report "$WORK/new.jsonl"
expect_rc 0 "report of an allowed load"
expect_in "$WORK/new-report.out" "        capguard run --emulate-driver 12020 --prime $WORK/new.cgp -- ${engine[*]}" "allowed-load advice"

# --- --rescue: the refused load is made in relaxed mode; run 1 works
run_em rescue --prime "$WORK/rescue.cgp" --emulate-driver 12020 --rescue
expect_rc 0 "--rescue: run 1 works"
grep -q '"call":"cuModuleLoadData","verdict":"rescued","result":0' "$WORK/rescue.jsonl" && pass || fail "rescued load logged"
expect_in "$WORK/rescue.err" "capguard: 1 process used CUDA, 1 capture, 0 broken" "rescue summary"
# on the fake as a real 12.2 driver too
FAKECUDA_DRIVER_VERSION=12020 run_em rescue122 --prime "$WORK/rescue122.cgp" --rescue
expect_rc 0 "--rescue on a 12.2 driver"
FAKECUDA_DRIVER_VERSION=12020 run_em plain122 --prime "$WORK/plain122.cgp"
expect_rc 1 "the same without --rescue breaks on 12.2"

# --- an existing LD_PRELOAD is kept: both libraries are mapped into the command
# (libresolv: a glibc library nothing here maps by itself; a sanitized shim
# brings libm in with the sanitizer's runtime)
libm=$(ldconfig -p | awk '/libresolv\.so\.2 .*x86-64/ {print $NF; exit}')
[ -n "$libm" ] || libm=libresolv.so.2
"$CAPGUARD" run -q --log "$WORK/maps.jsonl" -- cat /proc/self/maps >"$WORK/plain.maps" 2>&1
grep -q 'libresolv\.so' "$WORK/plain.maps" && fail "control: cat maps libresolv by itself" || pass
LD_PRELOAD=$libm "$CAPGUARD" run -q --log "$WORK/maps.jsonl" -- cat /proc/self/maps >"$WORK/pre.maps" 2>&1; rc=$?
expect_rc 0 "run with an existing LD_PRELOAD"
expect_in "$WORK/pre.maps" "$(readlink -f "$REAL_SHIM")" "the shim is mapped"
grep -q 'libresolv\.so' "$WORK/pre.maps" && pass || fail "the existing LD_PRELOAD ($libm) was dropped"
# the engine still works under both
LD_PRELOAD=$libm run_em pre --prime "$WORK/pre.cgp" --emulate-driver 12020
expect_rc 1 "engine with an existing LD_PRELOAD: run 1 breaks as without it"
grep -q '"verdict":"emulated"' "$WORK/pre.jsonl" && pass || fail "shim active beside an existing LD_PRELOAD"
finish
