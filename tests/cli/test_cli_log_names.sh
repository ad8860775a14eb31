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
env -u RANK LD_PRELOAD="$REAL_SHIM" CAPGUARD_LOG="$WORK/u.%q{RANK}.jsonl" "$DYING_HOST" alloc "$CUBIN" cg_test_fill >/dev/null 2>&1
[ -s "$WORK/u..jsonl" ] && pass || fail "%q{RANK} with RANK unset is not empty: $(ls "$WORK")"

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
