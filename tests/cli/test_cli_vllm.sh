#!/usr/bin/env bash
# capguard run over a vLLM-shaped process tree with the real shim and the fake
# driver (tests/fakecuda) as CUDA 12.2, which refuses module loads during capture:
# a parent (no CUDA) starts 3 fork+exec'd workers and one through posix_spawn of
# /bin/sh; each captures a graph in which it loads kernels_sm90.cubin and launches
# cg_test_fill (see vllm_like.c). Guard mode: run 1 breaks every worker, run 2
# with the same priming file works. Report mode: both runs break. Off: no events.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=12020
app=("$VLLM_LIKE" "$CUBIN" cg_test_fill)

# worker_pids LOG: pids of the processes that logged a "process" record
worker_pids() { process_field pid "$1"; }

# check_run1 TAG LOG MODE: what every broken first run must show
check_broken_run() {
  local tag=$1 log=$2
  local pids; pids=$(worker_pids "$log")
  local n; n=$(echo "$pids" | grep -c .)
  [ "$n" -eq 4 ] && pass || fail "$tag: $n process records, wanted 4 (3 forked workers + 1 via sh)"
  [ "$(echo "$pids" | sort -u | wc -l)" -eq 4 ] && pass || fail "$tag: process pids not distinct: $pids"
  # the shell-started worker is a grandchild: its parent is the shell, not the engine
  [ "$(process_field ppid "$log" | sort -u | wc -l)" -eq 2 ] && pass \
    || fail "$tag: wanted 2 distinct parents (engine, sh): $(process_field ppid "$log" | tr '\n' ' ')"
  grep -q '"argv":\["[^"]*vllm_like","--worker","3","--ex"' "$log" && pass || fail "$tag: shell-started worker's process record"
  for p in $pids; do
    grep -q "\"type\":\"event\",\"pid\":$p,.*\"verdict\":\"refused\"" "$log" && pass || fail "$tag: no refused load logged by pid $p"
    grep -q "\"type\":\"capture\",\"pid\":$p,.*\"status\":\"failed\"" "$log" && pass || fail "$tag: capture of pid $p not logged as failed"
  done
  grep -q '"call":"cuModuleLoadDataEx","verdict":"refused"' "$log" && pass || fail "$tag: cuModuleLoadDataEx of the shell-started worker"
  run_cg "$tag-report" report "$log"
  expect_rc 1 "$tag: report of broken captures"
  # 4 processes with CUDA in the headline: the engine never uses CUDA (its "start" record, written at start-up as
  # capguard run's own child), said in one line below; the shell that starts worker 3, a helper that never uses
  # CUDA, writes nothing
  expect_in "$WORK/$tag-report.out" "capguard report: 1 log, 4 processes with CUDA, 4 captures, 4 broken" "$tag: report counts"
  expect_in "$WORK/$tag-report.out" "  and 1 process without CUDA (vllm_like)" "$tag: the engine, without CUDA, in one line"
  [ "$(grep -c '"type":"start"' "$log")" -eq 5 ] && pass || fail "$tag: $(grep -c '"type":"start"' "$log") start records, wanted 5 (engine, 4 workers; none for the shell)"
  for p in $pids; do expect_in "$WORK/$tag-report.out" "  pid $p capture 1 (" "$tag: broken capture of pid $p listed"; done
  # the HTML timeline: a row for each of the 4 workers, none for the engine and the shell (no CUDA)
  "$CAPGUARD" report --html "$WORK/$tag.html" "$log" >/dev/null 2>&1
  expect_in "$WORK/$tag.html" "4 processes with CUDA, 4 captures, " "$tag: the HTML headline counts the processes with CUDA, as the text's"
  [ "$(grep -c '<text x="4"' "$WORK/$tag.html")" -eq 4 ] && pass || fail "$tag: $(grep -c '<text x="4"' "$WORK/$tag.html") timeline rows, wanted 4 (processes without CUDA get none)"
  expect_in "$WORK/$tag-report.out" "    kernels: cg_test_fill, cg_test_axpy" "$tag: kernel named"
  expect_in "$WORK/$tag-report.out" "      4       0  cg_test_fill" "$tag: kernel counted over processes"
  # one call site, the same in 3 processes at 3 addresses, counted once
  expect_in "$WORK/$tag-report.out" "      3  vllm_like" "$tag: cuModuleLoadData site deduplicated over processes"
}

# --- guard mode: run 1 breaks every worker and records the image; run 2 is served
"$CAPGUARD" run --log "$WORK/g1.jsonl" --prime "$WORK/prime.cgp" -- "${app[@]}" >"$WORK/g1.out" 2>"$WORK/g1.err"; rc=$?
expect_rc 1 "guard run 1: the engine's exit status"
expect_in "$WORK/g1.err" "engine: 4 of 4 workers failed" "guard run 1: every worker broke"
check_broken_run g1 "$WORK/g1.jsonl"
expect_in "$WORK/g1.err" "capguard: 4 processes used CUDA, 4 captures, 4 broken; 4 calls during capture (module-load 4, module-unload 0): refused 4" "guard run 1: summary over all workers"
[ -s "$WORK/prime.cgp" ] && pass || fail "guard run 1 recorded no priming file"
# the exact command, from the logged argv and priming file, pastes into a shell
expect_in "$WORK/g1.err" "capguard: next: run it again; the 1 image loaded during capture, recorded in $WORK/prime.cgp (kernels cg_test_axpy, cg_test_fill), will be loaded before capture:" "guard run 1: next step"
expect_in "$WORK/g1.err" "  capguard run --log $WORK/g1.jsonl --prime $WORK/prime.cgp -- ${app[*]}" "guard run 1: next step: the command on its own line"
expect_in "$WORK/g1.err" "capguard: why: 4 captures broke; the first broke in pid " "guard run 1: why"
expect_in "$WORK/g1.err" "the driver (CUDA 12.2) refused it: drivers before 12.3 refuse module loads during capture" "guard run 1: why, in words"

"$CAPGUARD" run --log "$WORK/g2.jsonl" --prime "$WORK/prime.cgp" -- "${app[@]}" >"$WORK/g2.out" 2>"$WORK/g2.err"; rc=$?
expect_rc 0 "guard run 2 with the priming file"
expect_in "$WORK/g2.out" "engine: all 4 workers ready" "guard run 2: every worker captured"
[ "$(worker_pids "$WORK/g2.jsonl" | sort -u | wc -l)" -eq 4 ] && pass || fail "guard run 2: 4 workers logged"
n=$(grep -c '"verdict":"served"' "$WORK/g2.jsonl"); [ "$n" -eq 4 ] && pass || fail "guard run 2: $n served loads, wanted 4"
expect_in "$WORK/g2.err" "capguard: 4 processes used CUDA, 4 captures, 0 broken; 4 calls during capture (module-load 4, module-unload 0): served 4" "guard run 2 summary"
expect_in "$WORK/g2.err" "capguard: next: priming worked: every load during capture was served from $WORK/prime.cgp" "guard run 2: next"
# a healthy start is quiet: one line per worker for its served loads, no blocks
[ "$(grep -c '^capguard: pid [0-9]*: cuModuleLoadData[Ex]* during capture: served from the priming file' "$WORK/g2.err")" -eq 4 ] && pass || fail "guard run 2: one served line per worker"
expect_not_in "$WORK/g2.err" "native stack:" "guard run 2: no event blocks for served loads"
run_cg g2-report report "$WORK/g2.jsonl"
expect_rc 0 "report with no broken capture"
expect_in "$WORK/g2-report.out" "4 processes with CUDA, 4 captures, 0 broken" "run 2 report counts"
expect_in "$WORK/g2-report.out" "served 4" "run 2 report: served loads"
expect_in "$WORK/g2-report.out" "4 loads during capture were served from the priming file: priming works" "run 2 advice"
expect_not_in "$WORK/g2-report.out" "Broken captures" "run 2 report lists no broken capture"
# both runs in one report: the latest decides; --all counts the breakage of run 1 too
run_cg both report "$WORK/g1.jsonl" "$WORK/g2.jsonl"
expect_rc 0 "report over both runs: the latest worked"
expect_in "$WORK/both.out" "  > run 2: pid " "both runs listed, the latest reported"
run_cg both-all report --all "$WORK/g1.jsonl" "$WORK/g2.jsonl"
expect_rc 1 "report --all over both runs"
expect_in "$WORK/both-all.out" "2 logs, 8 processes with CUDA, 8 captures, 4 broken" "both runs counted"
expect_in "$WORK/both-all.out" "      8       4  cg_test_fill" "both runs: loads and served per kernel"

# --- report mode: nothing recorded, nothing replayed: run 2 breaks as run 1 did
"$CAPGUARD" run --mode report --log "$WORK/r1.jsonl" --prime "$WORK/rprime.cgp" -- "${app[@]}" >/dev/null 2>"$WORK/r1.err"; rc=$?
expect_rc 1 "report-mode run 1"
check_broken_run r1 "$WORK/r1.jsonl"
[ -e "$WORK/rprime.cgp" ] && fail "report mode wrote a priming file" || pass
expect_in "$WORK/r1.err" "capguard: next: run it in guard mode (the default) to record the images and prime them on the run after:" "report-mode advice"
expect_in "$WORK/r1.err" "  capguard run --log $WORK/r1.jsonl --prime $WORK/rprime.cgp -- ${app[*]}" "report-mode advice: the command"
# even with guard mode's priming file at hand, report mode does not serve from it
"$CAPGUARD" run --mode report --log "$WORK/r2.jsonl" --prime "$WORK/prime.cgp" -- "${app[@]}" >/dev/null 2>"$WORK/r2.err"; rc=$?
expect_rc 1 "report-mode run 2 still breaks"
check_broken_run r2 "$WORK/r2.jsonl"
expect_not_in "$WORK/r2.jsonl" '"verdict":"served"' "report mode serves nothing"
grep -q '"mode":"report"' "$WORK/r2.jsonl" && pass || fail "process records say report mode"

# --- off: the shim stays out of the way; the driver breaks every worker, nothing is logged
"$CAPGUARD" run --mode off --log "$WORK/o1.jsonl" --prime "$WORK/prime.cgp" -- "${app[@]}" >/dev/null 2>"$WORK/o1.err"; rc=$?
expect_rc 1 "mode off: workers break (nothing served)"
expect_in "$WORK/o1.err" "engine: 4 of 4 workers failed" "mode off: every worker broke"
if [ -s "$WORK/o1.jsonl" ] && grep -q '"type":"event"' "$WORK/o1.jsonl"; then fail "mode off logged events"; else pass; fi
expect_in "$WORK/o1.err" "capguard: mode off: the shim stayed out of the way and logged nothing" "mode off named in the summary"

# --- a worker that loads with cuLibraryLoadData: priming records it as a library image,
# and run 2 is served a CUlibrary preloaded before capture, whose kernel it launches
lib_app=("$VLLM_LIKE" --workers 1 --library "$CUBIN" cg_test_fill)
"$CAPGUARD" run --log "$WORK/l1.jsonl" --prime "$WORK/lprime.cgp" -- "${lib_app[@]}" >/dev/null 2>"$WORK/l1.err"; rc=$?
expect_rc 1 "library worker: run 1 breaks"
grep -q '"call":"cuLibraryLoadData","verdict":"refused"' "$WORK/l1.jsonl" && pass || fail "cuLibraryLoadData refusal logged"
expect_in "$WORK/l1.err" "capguard: faster: each process stopped at its first refused load" "run summary: how to converge faster"
expect_in "$WORK/l1.err" "    capguard prime learn --prime $WORK/lprime.cgp -- ${lib_app[*]}" "run summary names prime learn, the exact command"
expect_in "$WORK/l1.err" "capguard prime check --prime $WORK/lprime.cgp -- ${lib_app[*]}" "run summary names prime check"
expect_in "$WORK/l1.err" "capguard run --log $WORK/l1.jsonl --rescue --prime $WORK/lprime.cgp -- ${lib_app[*]}" "run summary names --rescue"
expect_not_in "$WORK/l1.err" "priming does not serve" "library loads are primed now"
run_cg l1-report report "$WORK/l1.jsonl"
expect_in "$WORK/l1-report.out" "capguard prime learn --prime $WORK/lprime.cgp -- ${lib_app[*]}" "report advice: learn in one run, the exact command"
expect_in "$WORK/l1-report.out" "capguard run --rescue --prime $WORK/lprime.cgp -- ${lib_app[*]}" "report suggests --rescue, the exact command"
"$CAPGUARD" run --log "$WORK/l1b.jsonl" --prime "$WORK/lprime.cgp" -- "${lib_app[@]}" >/dev/null 2>"$WORK/l1b.err"; rc=$?
expect_rc 0 "library worker: run 2 served from the priming file"
grep -q '"call":"cuLibraryLoadData","verdict":"served"' "$WORK/l1b.jsonl" && pass || fail "cuLibraryLoadData served"
expect_not_in "$WORK/l1b.err" "capguard: faster:" "no convergence advice when nothing broke"
"$CAPGUARD" run --log "$WORK/l2.jsonl" --prime "$WORK/lprime2.cgp" --rescue -- "${lib_app[@]}" >/dev/null 2>&1; rc=$?
expect_rc 0 "library worker with --rescue works"
grep -q '"call":"cuLibraryLoadData","verdict":"rescued"' "$WORK/l2.jsonl" && pass || fail "cuLibraryLoadData rescued"
expect_not_in "$WORK/g1.err" "capguard: note:" "no note when nothing was skipped"

# --- a priming file that is not one, with 4 workers: capguard run says so once, not each worker again
echo garbage >"$WORK/bad.cgp"; chmod 600 "$WORK/bad.cgp"
"$CAPGUARD" run --log "$WORK/bad.jsonl" --prime "$WORK/bad.cgp" -- "${app[@]}" >/dev/null 2>"$WORK/bad.err"; rc=$?
[ "$(grep -c 'bad.cgp' "$WORK/bad.err" | head -1)" -ge 1 ] && pass || fail "the bad priming file is not named"
[ "$(grep -c "not a capguard priming file\|not a priming file" "$WORK/bad.err")" -eq 1 ] && pass \
  || fail "the bad priming file said $(grep -c "not a capguard priming file\|not a priming file" "$WORK/bad.err") times, wanted once:$(grep -i 'priming file' "$WORK/bad.err" | sed 's/^/    | /')"
expect_in "$WORK/bad.err" "capguard run: priming file $WORK/bad.cgp is not a priming file the shim can read" "capguard run's own line about it"
# a file named with --prime: capguard run tells the shim so, and the shim's advice names --prime
"$CAPGUARD" run --log "$WORK/opt.jsonl" --prime "$WORK/opt.cgp" -- sh -c 'echo "option=$CAPGUARD_PRIME_OPTION"' >"$WORK/opt.out" 2>&1
expect_in "$WORK/opt.out" "option=--prime" "capguard run --prime tells the shim how the file was named"
"$CAPGUARD" run --log "$WORK/noopt.jsonl" -- sh -c 'echo "option=$CAPGUARD_PRIME_OPTION"' >"$WORK/noopt.out" 2>&1
expect_in "$WORK/noopt.out" "option=" "no --prime: nothing told"
expect_not_in "$WORK/noopt.out" "option=--prime" "no --prime: not said to be given"
LD_PRELOAD=$REAL_SHIM CAPGUARD_PRIME=$WORK/bad.cgp CAPGUARD_PRIME_OPTION=--prime CAPGUARD_LOG=$WORK/direct.jsonl \
  "$VLLM_LIKE" --workers 1 "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/direct.err"
expect_in "$WORK/direct.err" "not a capguard priming file; left untouched: pass --prime another path" "the shim's advice names --prime when the file came from it"
expect_not_in "$WORK/direct.err" "set CAPGUARD_PRIME to another path" "the shim's advice does not name a variable the user never set"
finish
