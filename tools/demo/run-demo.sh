#!/usr/bin/env bash
# capguard's built-in demo, on any machine (no GPU: the fake driver stands in
# for an older one, 12.2, that refuses module loads during capture).
# Sets up (Debian packages), builds, then: run 1 of a small "engine" breaks
# its CUDA graph capture and capguard says why; run 2, same command, starts
# because capguard primed the kernel; then capguard report reads both runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bash tools/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
work=$(mktemp -d)
export LD_LIBRARY_PATH=$root/build/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FAKECUDA_DRIVER_VERSION=12020
engine=(build/tools/demo/demo_engine tests/data/kernels_sm90.cubin cg_test_fill)
cg=build/tools/capguard
for run in 1 2; do
  printf '\n\033[1m== run %s: capguard run -- demo_engine\033[0m\n' "$run"
  "$cg" run --log "$work/capguard.jsonl" --prime "$work/prime.cgp" -- "${engine[@]}" || true
done
printf '\n\033[1m== capguard report\033[0m\n'
"$cg" report "$work/capguard.jsonl" || true
echo
echo "(log and priming file kept in $work)"
