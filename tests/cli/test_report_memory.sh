#!/bin/bash
# capguard report of the latest run holds that run, not the older runs before
# it: a log of 32 MB of older runs and a small latest one is reported in
# about the memory of the latest alone, and says what a whole read says
# (standard input, which cannot be read twice, is read whole).
source "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

log=$WORK/many.jsonl
python3 "$here/many_runs_log.py" "$log" 32 "$DATA/run2.jsonl"
python3 "$here/many_runs_log.py" "$WORK/latest.jsonl" 0 "$DATA/run2.jsonl"

# max_rss_kb ARGS...: the peak resident memory of capguard ARGS (stdout discarded)
max_rss_kb() {
  python3 - "$CAPGUARD" "$@" <<'PY'
import resource, subprocess, sys
args = [a for a in sys.argv[1:] if not a.startswith("<")]
stdin = next((open(a[1:], "rb") for a in sys.argv[1:] if a.startswith("<")), subprocess.DEVNULL)
subprocess.run(args, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
alone=$(max_rss_kb report "$WORK/latest.jsonl")
many=$(max_rss_kb report "$log")
whole=$(max_rss_kb report - "<$log")
echo "max RSS: latest run alone $alone KB, after 32 MB of older runs $many KB, read whole $whole KB"
if [ "$many" -le $((alone + 8192)) ]; then pass; else
  fail "report of the latest run held $many KB, the latest alone $alone KB: older runs kept in memory"
fi

# The same report, text and JSON, as a whole read of the same lines.
for fmt in text json; do
  opt=(); [ "$fmt" = json ] && opt=(--json)
  "$CAPGUARD" report "${opt[@]}" "$log" >"$WORK/latest.$fmt" 2>&1; rc1=$?
  "$CAPGUARD" report "${opt[@]}" - <"$log" 2>&1 | sed "s|\"(stdin)\"|\"$log\"|" >"$WORK/whole.$fmt"
  rc2=${PIPESTATUS[0]}
  if [ $rc1 -eq $rc2 ] && cmp -s "$WORK/latest.$fmt" "$WORK/whole.$fmt"; then pass; else
    fail "$fmt report of the latest run ($rc1) differs from a whole read ($rc2)"
    diff "$WORK/latest.$fmt" "$WORK/whole.$fmt" | head -20 >&2
  fi
done
expect_in "$WORK/latest.text" "verdicts: allowed 1, served 1" "the latest run is the one reported"
expect_in "$WORK/latest.text" "1 capture, 1 broken, 79 loads served" "older runs counted in the runs' table"

# Older runs' lines among the latest's (a pid reused, lines interleaved):
# the same report as a whole read, whichever way it was read.
python3 "$here/many_runs_log.py" "$WORK/few.jsonl" 0.3 "$DATA/run2.jsonl"
{ head -n 3 "$WORK/few.jsonl"; tail -n 5 "$WORK/few.jsonl" | head -n 2; sed -n '4,$p' "$WORK/few.jsonl" | head -n -5
  tail -n 3 "$WORK/few.jsonl"; sed 's/"pid":4101/"pid":5200/' "$DATA/run1.jsonl"; } >"$WORK/mixed.jsonl"
"$CAPGUARD" report "$WORK/mixed.jsonl" >"$WORK/mixed.out" 2>&1; rc1=$?
"$CAPGUARD" report - <"$WORK/mixed.jsonl" >"$WORK/mixed.whole" 2>&1; rc2=$?
if [ $rc1 -eq $rc2 ] && cmp -s "$WORK/mixed.out" "$WORK/mixed.whole"; then pass; else
  fail "interleaved runs: report ($rc1) differs from a whole read ($rc2)"
  diff "$WORK/mixed.out" "$WORK/mixed.whole" | head -20 >&2
fi
finish
