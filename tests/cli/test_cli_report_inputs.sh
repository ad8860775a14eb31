#!/usr/bin/env bash
# Reports that cannot be fooled by their input (docs/reports.md,
# docs/reliability.md): a log read through a pipe, a FIFO or /dev/stdin says
# what the same log as a file says (the census reads a file twice; a pipe
# can be read once), `capguard report < log` reads standard input, a line
# past the cap is skipped and said in bounded memory, /dev/zero is stopped
# and said, a FIFO is waited on for its writer, and one with no writer
# never blocks the report.
. "$(dirname "$0")/lib.sh"
log=$DATA/run1.jsonl
# older runs, then the latest, broken: the census path, which reads a file
# twice (a pipe said "cannot read the logs again: Illegal seek")
python3 "$(dirname "$0")/many_runs_log.py" "$WORK/two.jsonl" 0.2 "$log"
"$CAPGUARD" report "$WORK/two.jsonl" >"$WORK/file.out" 2>"$WORK/file.err"; want=$?
[ "$want" -eq 1 ] && pass || fail "the log as a file: exit $want, wanted 1 (broken)"
same() { # same NAME RC: NAME.out says what the file says
  if [ "$2" -eq "$want" ] && cmp -s "$WORK/file.out" "$WORK/$1.out"; then pass; else
    fail "$1: exit $2 (the file: $want), and the report differs:"; diff "$WORK/file.out" "$WORK/$1.out" | head -8 >&2
  fi
}
"$CAPGUARD" report /dev/stdin <"$WORK/two.jsonl" >"$WORK/devstdin.out" 2>&1; same devstdin $?
cat "$WORK/two.jsonl" | "$CAPGUARD" report /dev/stdin >"$WORK/pipe.out" 2>&1; same pipe "${PIPESTATUS[1]}"
"$CAPGUARD" report <(gzip -c "$WORK/two.jsonl" | zcat) >"$WORK/subst.out" 2>&1; same subst $?
"$CAPGUARD" report <"$WORK/two.jsonl" >"$WORK/redirect.out" 2>&1; same redirect $?
mkfifo "$WORK/fifo"
cat "$WORK/two.jsonl" >"$WORK/fifo" &
"$CAPGUARD" report "$WORK/fifo" >"$WORK/fifo.out" 2>&1; same fifo $?
wait

# A FIFO whose writer comes after the report opened it: waited for, read
# whole (it used to read as empty, and the writer then blocked for ever)
mkfifo "$WORK/late"
(sleep 1; timeout 20 sh -c 'cat "$1" >"$2"' _ "$WORK/two.jsonl" "$WORK/late") &
timeout 20 "$CAPGUARD" report "$WORK/late" >"$WORK/late.out" 2>&1; same late $?
wait

# A FIFO no one writes to: given up after the wait, said, never a block
mkfifo "$WORK/lonely"
timeout 20 "$CAPGUARD" report "$WORK/lonely" >"$WORK/lonely.out" 2>&1
rc=$?
expect_rc 2 "a FIFO with no writer"
expect_in "$WORK/lonely.out" "cannot read '$WORK/lonely': a FIFO no writer opened within 5 s" "a FIFO with no writer: said"

# the exit status and peak RSS in KiB of capguard report ARGS (output discarded)
rss() {
  python3 - "$CAPGUARD" "$@" <<'PY'
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:2] + ["report"] + sys.argv[2:], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
# bounds over what a report of a small log holds: a line of 16 MiB (the cap)
# and what a sanitized build keeps of the buffers it grew (its quarantine)
read -r rc base < <(rss "$log")
# /dev/zero: one line without end; stopped at the cap, said, in bounded memory
read -r rc kb < <(rss /dev/zero)
expect_rc 2 "/dev/zero"
[ "$kb" -lt $((base + 96 * 1024)) ] && pass || fail "/dev/zero: peak RSS $kb KiB (a small log's: $base KiB)"
timeout 60 "$CAPGUARD" report /dev/zero >/dev/null 2>"$WORK/zero.err"
expect_in "$WORK/zero.err" "capguard report: 1 line longer than 16 MiB skipped; an input that is not a regular file stopped there" "/dev/zero: said"
# a 100 MB line among good ones, in a file: skipped and said, the rest read
{ head -n 3 "$log"; head -c 100000000 /dev/zero | tr '\0' x; echo; sed -n '4,$p' "$log"; } >"$WORK/long.jsonl"
read -r rc kb < <(rss "$WORK/long.jsonl")
[ "$kb" -lt $((base + 96 * 1024)) ] && pass || fail "a 100 MB line: peak RSS $kb KiB (a small log's: $base KiB)"
"$CAPGUARD" report "$WORK/long.jsonl" >"$WORK/long.out" 2>"$WORK/long.err"
expect_in "$WORK/long.err" "capguard report: 1 line longer than 16 MiB skipped" "a 100 MB line: said"
"$CAPGUARD" report "$log" >"$WORK/short.out" 2>&1
expect_in "$WORK/long.out" "1 malformed log line skipped (first: $WORK/long.jsonl:4: longer than 16 MiB)" "a 100 MB line: in the report"
cmp -s <(grep -v malformed "$WORK/long.out") "$WORK/short.out" && pass || fail "a 100 MB line: the rest of the log not read as without it"
# a summary's slowest capture that does not say where it began (a log cut,
# or written by hand): "(not logged)", where the text report read a NULL
# (a crash; the fuzz target log found it)
{ cat "$log"; printf '%s\n' '{"v":1,"type":"summary","pid":4242,"time_ns":1700000000000009999,"captures":1,"captures_broken":0,"captures_timed":1,"capture_ns":5000000,"first_capture_ns":1700000000000000100,"slowest":[{"id":1,"ns":5000000}]}'; } >"$WORK/noslow.jsonl"
"$CAPGUARD" report "$WORK/noslow.jsonl" >"$WORK/noslow.out" 2>&1; rc=$?
[ "$rc" -le 1 ] && pass || fail "a slowest capture without its site: exit $rc"
expect_in "$WORK/noslow.out" "began at (not logged)" "a slowest capture without its site"
finish
