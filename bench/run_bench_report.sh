#!/usr/bin/env bash
# How long `capguard report` takes, and its peak memory, on a generated log of
# SIZE (default 1G): many runs of a parent and 8 workers appended to one file
# (bench/gen_report_log.py). Prints one line: size, lines, seconds (wall, then
# user and system CPU: on a shared machine the CPU time is the figure), peak RSS.
# Usage: bench/run_bench_report.sh BUILDDIR [SIZE] [--all]
set -euo pipefail
build=${1:-build}
size=${2:-1G}
all=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/capguard-bench-report.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/gen_report_log.py" "$work/big.jsonl" "$size" >/dev/null
bytes=$(stat -c %s "$work/big.jsonl")
lines=$(wc -l <"$work/big.jsonl")
# GNU time's %e (wall seconds), %U and %S (CPU seconds) and %M (peak resident KiB) of the report alone
/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$build/tools/capguard" report $all "$work/big.jsonl" \
  >"$work/report.txt" 2>&1 || true   # exit 1: the log holds broken captures
read -r secs user sys kib < <(tail -1 "$work/time")   # a first line says a non-zero exit
printf 'capguard report %s: %d MiB log, %d lines: %s s (%s s user, %s s system), peak RSS %d MiB (%d cores)\n' \
  "${all:-(latest run)}" $((bytes >> 20)) "$lines" "$secs" "$user" "$sys" $((kib >> 10)) "$(nproc)"
head -1 "$work/report.txt"
