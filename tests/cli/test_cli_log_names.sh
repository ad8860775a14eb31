#!/usr/bin/env bash
# Log names as valgrind and nsys write them: %p (pid), %h (host), %q{VAR}
# (an environment variable, in each process), %% (a '%'). The shim opens
# the file the name expands to, and capguard run and capguard report read
# back every file of the run through the same expansion. Over the fake
# driver, with the real shim.
. "$(dirname "$0")/lib.sh"
use_real_shim
host=$(hostname)
app() { "$CAPGUARD" run -q --emulate-driver 12020 --prime "$WORK/p.cgp" "$@"; }

# --- %%: a literal '%', in one file, and the summary read it
app --log "$WORK/z%%.jsonl" -- "$DYING_HOST" alloc "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/pct.err"
[ -s "$WORK/z%.jsonl" ] && pass || fail "%% did not make the file z%.jsonl: $(ls "$WORK")"
[ -e "$WORK/z%%.jsonl" ] && fail "the shim wrote z%%.jsonl, not z%.jsonl" || pass
expect_in "$WORK/pct.err" "capguard: 1 process used CUDA, 1 capture, 1 broken" "%%: the summary"
expect_not_in "$WORK/pct.err" "the shim wrote nothing" "%%: the summary is not lost"
run_cg pct-report report "$WORK/z%%.jsonl"
expect_rc 1 "report of the %% name (a broken capture)"
expect_in "$WORK/pct-report.out" "capguard report: 1 log, 1 process, 1 capture, 1 broken" "report reads the %% name"

# --- %h: the host name
app --log "$WORK/h.%h.jsonl" -- "$DYING_HOST" alloc "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/host.err"
[ -s "$WORK/h.$host.jsonl" ] && pass || fail "%h did not make h.$host.jsonl: $(ls "$WORK")"
expect_in "$WORK/host.err" "capguard: 1 process used CUDA, 1 capture, 1 broken" "%h: the summary"
run_cg host-report report "$WORK/h.%h.jsonl"
expect_in "$WORK/host-report.out" "capguard report: 1 log, 1 process" "report reads the %h name"

# --- %q{RANK}: each worker's own value (a launcher's parent has none: an empty value)
RANK=7 app --log "$WORK/r.%q{RANK}.jsonl" -- sh -c 'RANK=0 "$@" & RANK=1 "$@"; wait' sh \
  "$DYING_HOST" alloc "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/rank.err"
for r in 0 1; do
  grep -q '"type":"process"' "$WORK/r.$r.jsonl" 2>/dev/null && pass || fail "%q{RANK}: no r.$r.jsonl with a process record: $(ls "$WORK")"
done
grep -q '"type":"start"' "$WORK/r.7.jsonl" 2>/dev/null && pass || fail "%q{RANK}: the shell (RANK=7) wrote no r.7.jsonl"
expect_in "$WORK/rank.err" "capguard: 2 processes used CUDA, 2 captures, 2 broken" "%q{RANK}: the summary reads every file"
run_cg rank-report report "$WORK/r.%q{RANK}.jsonl"
expect_in "$WORK/rank-report.out" "capguard report: 3 logs, 2 processes with CUDA, 2 captures, 2 broken" "report reads every %q{RANK} file"
# RANK unset (the shim alone): no hidden u..jsonl, one line on stderr
env -u RANK LD_PRELOAD="$REAL_SHIM" CAPGUARD_LOG="$WORK/u.%q{RANK}.jsonl" "$DYING_HOST" alloc "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/unset.err"
[ -e "$WORK/u..jsonl" ] && fail "%q{RANK} with RANK unset wrote u..jsonl" || pass
expect_in "$WORK/unset.err" "capguard: log name $WORK/u.%q{RANK}.jsonl expands %q{RANK} to nothing (RANK is unset); reporting on stderr only" "RANK unset: said"

# --- expansions that would lose or misplace a log (docs/reliability.md)
# RANK unset where run runs: refused before the start (as valgrind refuses
# %q{} of an unset variable), with the status --error-exitcode asks for;
# nothing named DIR/.jsonl.
mkdir -p "$WORK/q"
env -u RANK "$CAPGUARD" run -q --emulate-driver 12020 --prime "$WORK/q$RANDOM.cgp" --log "$WORK/q/%q{RANK}.jsonl" \
  --error-exitcode 9 -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/q.err"
rc=$?
expect_rc 9 "RANK unset: --error-exitcode"
[ -z "$(ls -A "$WORK/q")" ] && pass || fail "RANK unset: a file was written in the log's directory: $(ls -A "$WORK/q")"
expect_in "$WORK/q.err" "has %q{RANK}, but RANK is not set, so it would expand to nothing" "RANK unset: said before the start"
# set empty where run runs (a launcher whose workers set their own): taken;
# a process that uses CUDA with it still empty has its records in run's
# fallback file, read with the rest, and --error-exitcode says the log was
# not where it was asked
RANK= "$CAPGUARD" run -q --emulate-driver 12020 --prime "$WORK/q$RANDOM.cgp" --log "$WORK/q/%q{RANK}.jsonl" \
  --error-exitcode 9 -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/qe.err"
rc=$?
expect_rc 9 "RANK empty in the engine: --error-exitcode"
[ -z "$(ls -A "$WORK/q")" ] && pass || fail "RANK empty: a file was written in the log's directory: $(ls -A "$WORK/q")"
expect_in "$WORK/qe.err" "expands %q{RANK} to nothing (RANK is empty); this process's records go to " "RANK empty: the shim's line"
fb=$(sed -n 's/^capguard run: a process.s log name was refused, or its log could not be opened (its warning above says why): its records are in \(.*\)$/\1/p' "$WORK/qe.err")
[ -n "$fb" ] && [ -s "$fb" ] && pass || fail "RANK empty: run names no fallback file: $(cat "$WORK/qe.err")"
expect_in "$WORK/qe.err" "capguard: 1 process used CUDA, 1 capture, 1 broken" "RANK empty: the broken capture is in the summary"
[ -n "$fb" ] && rm -f "$fb"
# set here to nothing or to a path: refused before the command starts, with
# the status --error-exitcode asks for (2 without it), one line
for v in "../escape" "a/b"; do
  ran=$WORK/ran.$RANDOM
  RANK=$v "$CAPGUARD" run -q --log "$WORK/q/%q{RANK}.jsonl" --error-exitcode 9 -- touch "$ran" >/dev/null 2>"$WORK/qv.err"
  rc=$?
  expect_rc 9 "RANK='$v': --error-exitcode"
  [ -e "$ran" ] && fail "RANK='$v': the command ran" || pass
  expect_lines "$WORK/qv.err" 1 "RANK='$v': one line"
  RANK=$v "$CAPGUARD" run -q --log "$WORK/q/%q{RANK}.jsonl" -- true >/dev/null 2>&1
  rc=$?
  expect_rc 2 "RANK='$v' without --error-exitcode"
done
expect_in "$WORK/qv.err" "capguard run: the log $WORK/q/%q{RANK}.jsonl expands %q{RANK} to 'a/b', which holds '/' or '..'" "what a path in RANK says"
# set to a path by the command itself (a launcher): that process's records
# go to the fallback; nothing is written outside the log's directory
RANK= "$CAPGUARD" run -q --emulate-driver 12020 --prime "$WORK/q$RANDOM.cgp" --log "$WORK/q/%q{RANK}.jsonl" \
  --error-exitcode 9 -- sh -c 'RANK=../escape exec "$@"' sh "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/esc.err"
rc=$?
expect_rc 9 "RANK=../escape in the command: --error-exitcode"
[ -e "$WORK/escape.jsonl" ] && fail "RANK=../escape wrote outside the log's directory" || pass
expect_in "$WORK/esc.err" "expands %q{RANK} to '../escape', which holds '/' or '..'; this process's records go to " "RANK=../escape: the shim's line"
expect_in "$WORK/esc.err" "capguard: 1 process used CUDA, 1 capture, 1 broken" "RANK=../escape: nothing lost"
rm -f "$(sed -n 's/^capguard run: .*its records are in \(.*\)$/\1/p' "$WORK/esc.err")"
# a directory the expansion names that does not exist: refused before the start
ran=$WORK/ran.dir
RANK=0 "$CAPGUARD" run -q --log "$WORK/q/%q{RANK}/x.jsonl" --error-exitcode 9 -- touch "$ran" >/dev/null 2>"$WORK/qd.err"
rc=$?
expect_rc 2 "a missing directory: refused"
[ -e "$ran" ] && fail "a missing directory: the command ran" || pass
expect_in "$WORK/qd.err" "cannot be created: its directory $WORK/q/0 does not exist" "a missing directory: said"
# a directory per process (%p) that no one made: the records are not lost
"$CAPGUARD" run -q --emulate-driver 12020 --prime "$WORK/q$RANDOM.cgp" --log "$WORK/q/%p/x.jsonl" \
  --error-exitcode 9 -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/pd.err"
rc=$?
expect_rc 9 "a missing per-process directory: --error-exitcode"
expect_in "$WORK/pd.err" "capguard: 1 process used CUDA, 1 capture, 1 broken" "a missing per-process directory: nothing lost"
rm -f "$(sed -n 's/^capguard run: .*its records are in \(.*\)$/\1/p' "$WORK/pd.err")"
# a log file of more than one link (a hard link planted at the path) is
# never appended to: run refuses it, the shim alone says it
printf 'victim\n' >"$WORK/victim"
ln "$WORK/victim" "$WORK/q/linked.jsonl"
run_cg link run -q --log "$WORK/q/linked.jsonl" -- true
expect_rc 2 "a log of two links: refused"
expect_in "$WORK/link.err" "has 2 links (a hard link to a file elsewhere?): capguard appends only to a file of one link" "two links: said"
CAPGUARD_LOG=$WORK/q/linked.jsonl LD_PRELOAD=$REAL_SHIM "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/link2.err"
[ "$(cat "$WORK/victim")" = victim ] && pass || fail "the shim appended to a file of two links"
expect_in "$WORK/link2.err" "has 2 links" "two links: the shim says it"

# --- %p still one file per process
app --log "$WORK/p.%p.jsonl" -- "$VLLM_LIKE" --workers 2 "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/pid.err"
[ "$(ls "$WORK"/p.[0-9]*.jsonl | wc -l)" -ge 3 ] && pass || fail "%p: not a file per process: $(ls "$WORK")"
expect_in "$WORK/pid.err" "capguard: 3 processes used CUDA" "%p: the summary (2 workers and one through sh)"

# --- a name that is not valid: refused before the command starts, one line
ran=$WORK/ran
for bad in 'a%x.jsonl' 'q%q.jsonl' 'q%q{}.jsonl' 'e%'; do
  rm -f "$ran"
  run_cg bad run --log "$WORK/$bad" -- sh -c "touch '$ran'"
  expect_rc 2 "--log $bad"
  [ -e "$ran" ] && fail "--log $bad: the command ran" || pass
  expect_lines "$WORK/bad.err" 1 "--log $bad: one line"
done
expect_in "$WORK/bad.err" "ends in a lone '%' (write %% for a '%')" "what a lone % says"
finish
