#!/usr/bin/env bash
# The built-in demo end to end, without its package installation and build
# (run-demo.sh does those, then runs tools/demo/demo-steps.sh, which is run here
# on meson's build tree): run 1 breaks and says why, run 2 works, the report names
# the kernel and what to do.
. "$(dirname "$0")/lib.sh"
steps=$SOURCE_ROOT/tools/demo/demo-steps.sh
grep -q '^exec bash tools/demo/demo-steps.sh build$' "$SOURCE_ROOT/tools/demo/run-demo.sh" && pass \
  || fail "run-demo.sh no longer runs demo-steps.sh: this test would not test the demo"
unset LD_LIBRARY_PATH CAPGUARD_SHIM   # the demo finds the fake driver and the shim by itself
# the demo runs the build's capguard: that one is "capguard" on PATH (also when
# lib.sh put an installed command under test first)
PATH=$BUILD_ROOT/tools:$PATH
export XDG_CACHE_HOME=$WORK/cache HOME=$WORK

bash "$steps" "$BUILD_ROOT" "$WORK/demo" >"$WORK/demo.out" 2>&1; rc=$?
expect_rc 0 "demo-steps.sh: run 1 broke, run 2 worked, the report says the latest run is healthy"
o=$WORK/demo.out
# README's first command tells the whole story in under 45 lines (each command on a line of its own)
n=$(wc -l <"$o"); [ "$n" -lt 45 ] && pass || fail "the demo printed $n lines, wanted under 45"
expect_in "$o" "== run 1 exited with status 1: the engine gave up (its graph capture broke)" "run 1 exit status shown"
expect_in "$o" "== run 2 exited with status 0: the engine captured its graph and serves" "run 2 exit status shown"
# the commands shown are the commands run
expect_in "$o" "== run 1: capguard run --quiet --log capguard.jsonl --prime prime.cgp -- demo_engine kernels_sm90.cubin cg_test_fill" "run 1's command shown"
grep -q '"$cg" run --quiet --log "$work/capguard.jsonl" --prime "$work/prime.cgp" -- "${engine\[@\]}"' "$steps" && pass || fail "the command shown is not the one run"
# what broke, and why, in run 1's summary
expect_in "$o" "engine: CUDA graph capture failed" "the engine's own failure"
expect_in "$o" "capguard: why: a capture broke in pid " "run 1: why"
expect_in "$o" "when it called cuModuleLoadData (kernels cg_test_fill, cg_test_axpy): the driver (CUDA 12.2) refused it: drivers before 12.3 refuse module loads during capture" "run 1: why, in words"
expect_in "$o" "capguard: next: run it again; the 1 image loaded during capture, recorded in $WORK/demo/prime.cgp (kernels cg_test_axpy, cg_test_fill), will be loaded before capture:" "run 1: what to do, as a command"
expect_in "$o" "  capguard run --log $WORK/demo/capguard.jsonl -q --prime $WORK/demo/prime.cgp -- $BUILD_ROOT/tools/demo/demo_engine $SOURCE_ROOT/tests/data/kernels_sm90.cubin cg_test_fill" "run 1: what to do, as a command: the command on its own line"
expect_in "$o" "capguard: next: priming worked: every load during capture was served from $WORK/demo/prime.cgp" "run 2: priming worked"
expect_in "$o" "engine: decode graph captured and replayed; serving" "run 2: the engine serves"
expect_not_in "$o" "native stack:" "--quiet: no event blocks"
if grep -q $'\033' "$o"; then fail "escape codes in piped demo output"; else pass; fi
expect_in "$o" "    run 1: pid " "the report lists run 1"
expect_in "$o" "(1 process): 1 capture, 1 broken" "run 1 broke"
expect_in "$o" "  > run 2: pid " "the report is of run 2"
expect_in "$o" "(1 process): 1 capture, 0 broken, 1 load served from the priming file" "run 2 primed"

# the page-and-trace hint pastes and runs as shown, capguard on PATH or not
hint=$(tail -n 1 "$o")
case $hint in "  $BUILD_ROOT/tools/capguard report --all --html "*) pass ;; *) fail "hint is not a full command: '$hint'" ;; esac
(PATH=/usr/bin:/bin; eval "$hint") >"$WORK/hint.out" 2>&1; rc=$?
expect_rc 1 "the hint runs (exit 1: run 1's capture broke)"
[ -s "$WORK/demo/page.html" ] && [ -s "$WORK/demo/trace.json" ] && pass || fail "the hint wrote no page or trace: $(cat "$WORK/hint.out")"

# the log says the same, independently of what the script printed
log=$WORK/demo/capguard.jsonl
[ "$(grep -c '"type":"process"' "$log")" -eq 2 ] && pass || fail "wanted 2 processes (run 1, run 2) in $log"
first=$(process_field pid "$log" | head -1); second=$(process_field pid "$log" | tail -1)
grep -q "\"type\":\"capture\",\"pid\":$first,.*\"status\":\"failed\"" "$log" && pass || fail "run 1's capture not failed in the log"
grep -q "\"type\":\"capture\",\"pid\":$second,.*\"status\":\"ended\"" "$log" && pass || fail "run 2's capture did not end well"
grep -q "\"pid\":$second,.*\"verdict\":\"served\"" "$log" && pass || fail "run 2: no served load"
# the event the summary condensed is in the log in full
grep -q "\"pid\":$first,.*\"verdict\":\"refused\".*\"native_stack\":\[\"" "$log" && pass || fail "run 1's refused load, with its stack, not in the log"

# the report over both runs, and its exit status
run_cg report report --all "$log"
expect_rc 1 "report --all of the demo log (run 1 broke)"
r=$WORK/report.out
expect_in "$r" "1 log, 2 processes, 2 captures, 1 broken" "report totals"
expect_in "$r" "  pid $first demo_engine " "run 1's process"
expect_in "$r" "(guard mode, CUDA 12.2): 1 capture, 1 broken" "run 1 broke"
expect_in "$r" "  pid $second demo_engine " "run 2's process"
expect_in "$r" "(guard mode, CUDA 12.2): 1 capture, 0 broken, 1 load served from the priming file" "run 2 primed"
expect_in "$r" "    kernels: cg_test_fill, cg_test_axpy" "kernel of the broken capture"
expect_in "$r" "      2       1  cg_test_fill" "kernel listed: loaded in both runs, served in one"
expect_in "$r" "warm these 2 kernels (cg_test_axpy, cg_test_fill) up before capture" "advice names the kernel"
expect_in "$r" "1 load during capture was served from the priming file: priming works" "advice: priming works"
finish
