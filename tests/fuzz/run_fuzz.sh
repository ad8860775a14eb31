#!/usr/bin/env bash
# Runs every libFuzzer target of BUILDDIR (built with -Dfuzz=true, CC=clang)
# for SECONDS each, from a scratch copy of its seed corpus, the targets side
# by side (one per core). Exit 1 if any target found a crash, a leak, an
# ASan/UBSan report or a timeout: its log and the input that did it are shown.
# Usage: tests/fuzz/run_fuzz.sh BUILDDIR [SECONDS]   (CI: 60)
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: run_fuzz.sh BUILDDIR [SECONDS]}
secs=${2:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/capguard-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
targets=()
for src in tests/fuzz/fuzz_*.c; do t=$(basename "$src" .c); targets+=("tests/fuzz/$t"); done
ninja -C "$build" "${targets[@]}" >/dev/null || { echo "run_fuzz: cannot build ${targets[*]} in $build" >&2; exit 2; }
pids=() names=()
for src in tests/fuzz/fuzz_*.c; do
  t=$(basename "$src" .c); t=${t#fuzz_}
  bin="$build/tests/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "run_fuzz: $bin not built (meson setup $build -Dfuzz=true with CC=clang)" >&2; exit 2; }
  mkdir -p "$work/$t/corpus" "$work/$t/crash"
  cp tests/fuzz/corpus/"$t"/* "$work/$t/corpus/"
  dict=(); [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  # -timeout: one input taking 10 s is a hang; -max_len as tests/fuzz/README.md.
  "$bin" "${dict[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -max_total_time="$secs" \
    -print_final_stats=1 -artifact_prefix="$work/$t/crash/" "$work/$t/corpus" >"$work/$t.log" 2>&1 &
  pids+=($!) names+=("$t")
done
rc=0
for i in "${!pids[@]}"; do
  t=${names[$i]}
  if wait "${pids[$i]}"; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
    echo "fuzz_$t: ${secs} s, ${runs:-?} runs, no failure"
  else
    rc=1
    echo "fuzz_$t: FAILED" >&2
    grep -v '^#' "$work/$t.log" | tail -40 >&2
    for f in "$work/$t/crash"/*; do
      [ -f "$f" ] && { echo "input $(basename "$f") ($(stat -c %s "$f") bytes), base64:" >&2; base64 "$f" >&2; }
    done
  fi
done
exit $rc
