#!/usr/bin/env bash
# How long `capguard report` takes, and its peak memory, on a log of N
# processes of one run (default 10^6, about 2.6 GB; bench/gen_many_procs_log.py):
# each a worker of a launcher with its rank, one call during capture and its
# capture (one in ten broken). Prints one line: processes, size, seconds,
# CPU seconds, peak RSS. Usage: bench/run_bench_report_procs.sh BUILDDIR [N]
set -euo pipefail
build=${1:-build}
n=${2:-1000000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/capguard-bench-procs.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/gen_many_procs_log.py" "$work/procs.jsonl" "$n" >/dev/null
bytes=$(stat -c %s "$work/procs.jsonl")
/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$build/tools/capguard" report "$work/procs.jsonl" \
  >"$work/report.txt" 2>&1 || true   # exit 1: the log holds broken captures
read -r secs user sys kib < <(tail -1 "$work/time")
printf 'capguard report: %d processes, %d MiB log: %s s (%s s user, %s s system), peak RSS %d MiB (%d cores)\n' \
  "$n" $((bytes >> 20)) "$secs" "$user" "$sys" $((kib >> 10)) "$(nproc)"
head -1 "$work/report.txt"
