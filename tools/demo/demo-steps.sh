#!/usr/bin/env bash
# The demo's runs, on an already built tree (run-demo.sh installs and builds
# first; tests/cli/test_demo.sh runs this directly). Usage:
#   demo-steps.sh BUILD_DIR [WORK_DIR]
# The fake driver (tests/fakecuda) plays CUDA 12.2, which refuses module loads
# during graph capture. Run 1 of a small engine breaks its capture and capguard
# says why; run 2, the same command, works because capguard loads the kernel
# run 1 recorded before capture; capguard report then lists both runs and
# reports on the latest.
# Exit status: 0 when run 1 broke and run 2 worked, as the demo means them to.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: demo-steps.sh BUILD_DIR [WORK_DIR]}" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
export LD_LIBRARY_PATH=$build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FAKECUDA_DRIVER_VERSION=12020
unset CAPGUARD_LOG CAPGUARD_MODE CAPGUARD_PRIME CAPGUARD_EMULATE_DRIVER CAPGUARD_RESCUE
engine=("$build/tools/demo/demo_engine" "$root/tests/data/kernels_sm90.cubin" cg_test_fill)
cg=$build/tools/capguard
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then b=$'\033[1m' r=$'\033[0m'; else b= r=; fi

say() { printf '\n%s== %s%s\n' "$b" "$*" "$r"; }

echo "The engine loads a kernel for the first time inside CUDA graph capture (as a JIT"
echo "does on first use); this driver, CUDA 12.2, refuses module loads during capture."
declare -A status
for run in 1 2; do
  # --quiet: the summary tells the story; the event's own report (stack, image) is in the log
  say "run $run: capguard run --quiet --log capguard.jsonl --prime prime.cgp -- demo_engine kernels_sm90.cubin cg_test_fill"
  "$cg" run --quiet --log "$work/capguard.jsonl" --prime "$work/prime.cgp" -- "${engine[@]}"
  status[$run]=$?
  if [ "${status[$run]}" = 0 ]; then
    echo "${b}== run $run exited with status 0: the engine captured its graph and serves$r"
  else
    echo "${b}== run $run exited with status ${status[$run]}: the engine gave up (its graph capture broke)$r"
  fi
done
say "capguard report capguard.jsonl: a line per run; the report is of the latest"
"$cg" report "$work/capguard.jsonl" >"$work/report.txt"
report_status=$?
sed -n '/^Runs/,/^$/p' "$work/report.txt" | sed '/^$/d'
echo "(exit $report_status: the latest run is healthy; the full report: $work/report.txt)"
echo "A page and a Perfetto trace of both runs:"
printf '  %q report --all --html %q --trace %q %q\n' "$cg" "$work/page.html" "$work/trace.json" "$work/capguard.jsonl"
[ "${status[1]}" = 1 ] && [ "${status[2]}" = 0 ] && [ "$report_status" = 0 ]
