#!/usr/bin/env bash
# What capguard run and the real shim say when nothing is wrong, when the log
# cannot hold what happened, and when the log is not a plain file: "no CUDA
# used" (and no temporary log left), --quiet, %p in the log path, a FIFO or a
# device as the log (never blocks the host), a log cut short by the file size
# limit (the summary says the log is incomplete), echoed values made harmless.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=12020
export TMPDIR=$WORK/tmp
mkdir -p "$TMPDIR"
engine=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)
app=("$VLLM_LIKE" "$CUBIN" cg_test_fill)

# --- a command that never uses CUDA: said so, and no temporary log left behind
run_cg nocuda run -- sh -c 'echo hello; true'
expect_rc 0 "a command without CUDA"
expect_in "$WORK/nocuda.err" "capguard: no CUDA used: 1 process ran under the shim (sh -c echo hello; true), none loaded the CUDA driver; nothing to check" "no CUDA used"
expect_not_in "$WORK/nocuda.err" "wrote nothing" "no false alarm"
expect_lines "$WORK/nocuda.err" 1 "one line"
[ -z "$(ls -A "$TMPDIR")" ] && pass || fail "temporary log left behind: $(ls "$TMPDIR")"
# with --log the file is the user's: kept, and it says which processes ran
run_cg nocuda-log run --log "$WORK/nocuda.jsonl" -- sh -c 'true'
grep -q '"type":"start",.*"argv":\["sh","-c","true"\]' "$WORK/nocuda.jsonl" && pass || fail "start record of a process without CUDA"
expect_not_in "$WORK/nocuda.jsonl" '"type":"process"' "no process record without CUDA"
run_cg nocuda-report report "$WORK/nocuda.jsonl"
expect_rc 0 "report of a run without CUDA"
expect_in "$WORK/nocuda-report.out" "(guard mode, no CUDA): 0 captures, 0 broken" "report names the process without CUDA"
# 1,000 helpers that never use CUDA write nothing: the command's own start
# record (capguard run's child, so that the summary can say no CUDA was used)
# and no other; a helper that does use CUDA writes its start record then,
# with its process record (before: 1,002 start records)
run_cg helpers run --log "$WORK/helpers.jsonl" -- \
  sh -c 'i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i + 1)); done; "$@"' sh "${engine[@]}"
n=$(grep -c '"type":"start"' "$WORK/helpers.jsonl")
[ "$n" -eq 2 ] && pass || fail "1,000 helpers without CUDA: $n start records, wanted 2 (the command's, the engine's)"
[ "$(grep -c '"type":"process"' "$WORK/helpers.jsonl")" -eq 1 ] && pass || fail "1,000 helpers: one process record, the engine's"
engine_pid=$(grep -o '"type":"process","pid":[0-9]*' "$WORK/helpers.jsonl" | grep -o '[0-9]*$')
[ "$(grep -o '"type":"start","pid":[0-9]*' "$WORK/helpers.jsonl" | grep -c ":$engine_pid$")" -eq 1 ] && pass ||
  fail "1,000 helpers: the engine's start record"
expect_in "$WORK/helpers.err" "capguard: 1 process used CUDA, 1 capture, 1 broken" "1,000 helpers: the summary counts the engine"
# under the shim alone (no capguard run): helpers that never use CUDA leave the log empty
: >"$WORK/alone.jsonl"
LD_PRELOAD=$REAL_SHIM CAPGUARD_LOG=$WORK/alone.jsonl sh -c 'i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i + 1)); done'
[ ! -s "$WORK/alone.jsonl" ] && pass || fail "1,000 helpers under the shim alone wrote $(wc -l <"$WORK/alone.jsonl") lines"
# and with a file per process (%p), no file: only a process that uses the driver creates its own
mkdir "$WORK/per-pid"
LD_PRELOAD=$REAL_SHIM CAPGUARD_LOG=$WORK/per-pid/%p.jsonl sh -c 'i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i + 1)); done'
[ -z "$(ls -A "$WORK/per-pid")" ] && pass || fail "1,000 helpers with %p left $(ls "$WORK/per-pid" | wc -l) files"

# --- a temporary log that holds something is kept and named
run_cg tmpkept run -- "${engine[@]}"
tmplog=$(sed -n 's/^capguard: log: \(.*\) (a temporary file, kept for the command below: delete it when done); details:$/\1/p' "$WORK/tmpkept.err")
[ -s "$tmplog" ] && pass || fail "temporary log with events not kept: '$tmplog'"

# --- --quiet (CAPGUARD_QUIET=1): no event blocks; the summary stays
run_cg quiet run --quiet --log "$WORK/quiet.jsonl" --prime "$WORK/q.cgp" -- "${engine[@]}"
expect_rc 1 "quiet run 1 breaks"
expect_not_in "$WORK/quiet.err" "native stack:" "--quiet: no event block"
expect_in "$WORK/quiet.err" "capguard: why: a capture broke" "--quiet keeps the summary"
grep -q '"verdict":"refused"' "$WORK/quiet.jsonl" && pass || fail "--quiet: the log keeps the event"
# the variable means the same without capguard run: the process's own exit line stays
CAPGUARD_QUIET=1 LD_PRELOAD=$REAL_SHIM "${engine[@]}" >/dev/null 2>"$WORK/q-env.err"
expect_not_in "$WORK/q-env.err" "native stack:" "CAPGUARD_QUIET=1: no event block"
# (capguard run above primed the program's own file, prime.d/demo_engine.cgp: the shim
# alone, without CAPGUARD_PRIME, reads the shared default and the capture breaks)
expect_in "$WORK/q-env.err" "capguard: 1 capture (1 broken), events: " "CAPGUARD_QUIET=1: the exit line stays"
# without it, the block carries the pid and the time (report mode: nothing served from a priming file)
CAPGUARD_MODE=report LD_PRELOAD=$REAL_SHIM "${engine[@]}" >/dev/null 2>"$WORK/loud.err"
grep -qE '^capguard: pid [0-9]+, [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} UTC: cuModuleLoadData during capture 1 ' "$WORK/loud.err" \
  && pass || fail "event block without pid and time: $(head -1 "$WORK/loud.err")"

# --- %p: one log per process, all summarised
run_cg perpid run --log "$WORK/pp-%p.jsonl" --prime "$WORK/pp.cgp" -- "${app[@]}"
n=$(ls "$WORK"/pp-*.jsonl 2>/dev/null | wc -l)
# the engine (capguard run's own child) and 4 workers; the shell that starts one
# of them never uses CUDA and leaves no file
[ "$n" -eq 5 ] && pass || fail "%p: $n log files, wanted 5 (engine, 4 workers; none for sh)"
for f in "$WORK"/pp-*.jsonl; do
  pid=${f##*/pp-}; pid=${pid%.jsonl}
  [ "$(grep -o '"pid":[0-9]*' "$f" | sort -u)" = "\"pid\":$pid" ] && pass || fail "$f holds lines of other pids"
done
expect_in "$WORK/perpid.err" "capguard: 4 processes used CUDA, 4 captures, 4 broken" "%p: the summary covers every file"
expect_in "$WORK/perpid.err" "capguard: log: $WORK/pp-%p.jsonl; details:" "%p: the pattern named"
expect_in "$WORK/perpid.err" "  capguard report $WORK/pp-%p.jsonl" "%p: the command reads the pattern"

# --- a FIFO as the log never blocks the host: refused with one warning
mkfifo "$WORK/fifo"
CAPGUARD_LOG=$WORK/fifo LD_PRELOAD=$REAL_SHIM timeout 20 /bin/echo fine >"$WORK/fifo.out" 2>"$WORK/fifo.err"; rc=$?
expect_rc 0 "a FIFO as CAPGUARD_LOG: the host runs and exits"
expect_in "$WORK/fifo.out" "fine" "the host's output"
expect_in "$WORK/fifo.err" "capguard: cannot open log $WORK/fifo: it is a FIFO with no reader, not a regular file; reporting on stderr only" "FIFO refused"
# ...also when a reader holds it open (open would succeed; writes could block)
sleep 30 <"$WORK/fifo" & reader=$!
CAPGUARD_MODE=report CAPGUARD_LOG=$WORK/fifo LD_PRELOAD=$REAL_SHIM timeout 20 "${engine[@]}" >/dev/null 2>"$WORK/fifo2.err"; rc=$?
kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
expect_rc 1 "FIFO with a reader: the engine runs (and breaks, as without capguard), no hang"
expect_in "$WORK/fifo2.err" "capguard: cannot open log $WORK/fifo: it is not a regular file; reporting on stderr only" "FIFO with a reader refused"
CAPGUARD_LOG=/dev/full LD_PRELOAD=$REAL_SHIM /bin/true 2>"$WORK/full.err"; rc=$?
expect_rc 0 "/dev/full as the log"
expect_in "$WORK/full.err" "capguard: cannot open log /dev/full: it is not a regular file" "a device refused"

# --- a log the file size limit cuts short: one warning per process, the summary says so
# (SIGXFSZ ignored, as a service manager may: the write then fails with EFBIG; stderr
# goes through a pipe, to a file the limit does not apply to)
( trap '' XFSZ; ulimit -f 1; exec "$CAPGUARD" run --log "$WORK/cut.jsonl" --prime "$WORK/cut.cgp" -- "${engine[@]}" ) \
  2>&1 >/dev/null | cat >"$WORK/cut.err"; rc=${PIPESTATUS[0]}
expect_rc 1 "engine under a 1 KiB file size limit (its capture breaks)"
[ "$(grep -c "^capguard: cannot write to the log $WORK/cut.jsonl (File too large): the log is incomplete from here on" "$WORK/cut.err")" -eq 1 ] \
  && pass || fail "one warning for the failed write"
expect_in "$WORK/cut.err" "capguard: the log is incomplete: it reached the file size limit (ulimit -f); the counts above are lower bounds" "summary says incomplete"
expect_not_in "$WORK/cut.err" "nothing to do" "no all-clear from an incomplete log"
expect_not_in "$WORK/cut.err" "static" "no blame on a static binary"
# nothing could be written at all
( trap '' XFSZ; ulimit -f 0; exec "$CAPGUARD" run --log "$WORK/none.jsonl" --prime "$WORK/none.cgp" -- "${engine[@]}" ) \
  2>&1 >/dev/null | cat >"$WORK/none.err"
expect_in "$WORK/none.err" "capguard: the log $WORK/none.jsonl holds nothing: it reached the file size limit (ulimit -f), so capguard cannot say what happened" "empty log explained"
expect_not_in "$WORK/none.err" "static" "no blame on a static binary"
# a full filesystem (a 64 KiB tmpfs), where mounting is allowed
mkdir -p "$WORK/small"
if mount -t tmpfs -o size=64k tmpfs "$WORK/small" 2>/dev/null; then
  head -c 60000 /dev/zero >"$WORK/small/filler" 2>/dev/null
  head -c 100000 /dev/zero >>"$WORK/small/filler" 2>/dev/null
  "$CAPGUARD" run --log "$WORK/small/full.jsonl" --prime "$WORK/fs.cgp" -- "${engine[@]}" >/dev/null 2>"$WORK/fs.err"
  # whole lines on a full disk too (docs/reliability.md, attack 6): the part of a line the
  # disk had no room for is taken back
  python3 - "$WORK/small/full.jsonl" <<'PY' && pass || fail "a full disk left a torn line in the log"
import json, sys
data = open(sys.argv[1], "rb").read()
assert not data or data.endswith(b"\n"), "torn last line"
for line in data.splitlines():
    json.loads(line)
PY
  umount "$WORK/small"
  expect_in "$WORK/fs.err" "capguard: cannot write to the log $WORK/small/full.jsonl (No space left on device)" "ENOSPC warned"
  expect_in "$WORK/fs.err" "its filesystem is full" "summary: filesystem full"
  expect_not_in "$WORK/fs.err" "nothing to do" "no all-clear on a full disk"
else
  echo "note: tmpfs mount not allowed here; the full-filesystem case was not run (ulimit -f covers the write failure)"
fi

# --- values echoed by the shim cannot drive the terminal
CAPGUARD_MODE=$'gu\e[31mard' LD_PRELOAD=$REAL_SHIM /bin/true 2>"$WORK/mode.err"
if LC_ALL=C grep -q $'\x1b' "$WORK/mode.err"; then fail "escape character echoed by the shim"; else pass; fi
expect_in "$WORK/mode.err" "CAPGUARD_MODE=gu\\x1b[31mard is not a mode" "control character replaced"
finish
