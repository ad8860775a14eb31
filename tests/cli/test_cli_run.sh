#!/usr/bin/env bash
# capguard run: the shim preloaded (CAPGUARD_SHIM stands in for the real one),
# env passed to the command and its children, LD_PRELOAD kept, exit status
# propagated, the log (given or temporary) summarised.
. "$(dirname "$0")/lib.sh"
export CAPGUARD_SHIM=$FAKE_SHIM
unset CAPGUARD_LOG CAPGUARD_MODE CAPGUARD_PRIME CAPGUARD_EMULATE_DRIVER CAPGUARD_RESCUE
export TMPDIR=$WORK

# --- exit status of the command
run_cg ok run -- true;                 expect_rc 0 "run true"
run_cg three run -- sh -c 'exit 3';    expect_rc 3 "run exit 3"
run_cg nocmd run -- /nonexistent/cmd;  expect_rc 127 "run of a missing command"
expect_in "$WORK/nocmd.err" "capguard run: cannot run '/nonexistent/cmd': No such file or directory" "missing command error"
printf 'not a program' >"$WORK/noexec"; chmod 644 "$WORK/noexec"
run_cg noexec run -- "$WORK/noexec";   expect_rc 126 "run of a non-executable file"
# options end at the first non-option: the command's own options are its own
run_cg own run sh -c 'echo "$0 $1"' --mode x; expect_rc 0 "command options left alone"
expect_in "$WORK/own.out" "--mode x" "command's own arguments"

# --- environment seen by the command (and by its children)
echo "preexisting" >/dev/null
# --prime's directory must exist (capguard run creates none for a path it is given)
cd "$WORK" && mkdir -p rel
LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$CAPGUARD" run --mode guard --log "$WORK/given.jsonl" \
  --prime "rel/prime.cgp" --emulate-driver 12020 --rescue --stale -- \
  sh -c 'env | grep -E "^(LD_PRELOAD|CAPGUARD_[A-Z_]*)=" | sort; sh -c "echo child \$CAPGUARD_MODE"' \
  >"$WORK/env.out" 2>"$WORK/env.err"; rc=$?
expect_rc 0 "run with every option"
real_shim=$(readlink -f "$FAKE_SHIM")
expect_in "$WORK/env.out" "LD_PRELOAD=$real_shim:/lib/x86_64-linux-gnu/libc.so.6" "shim first, existing LD_PRELOAD kept"
expect_in "$WORK/env.out" "CAPGUARD_MODE=guard" "--mode"
expect_in "$WORK/env.out" "CAPGUARD_LOG=$WORK/given.jsonl" "--log"
expect_in "$WORK/env.out" "CAPGUARD_PRIME=$PWD/rel/prime.cgp" "--prime made absolute"
expect_in "$WORK/env.out" "CAPGUARD_EMULATE_DRIVER=12020" "--emulate-driver"
expect_in "$WORK/env.out" "CAPGUARD_RESCUE=1" "--rescue"
expect_in "$WORK/env.out" "CAPGUARD_STALE=1" "--stale"
run_cg stale_off run --mode off --stale -- true; expect_rc 2 "--stale with --mode off"
expect_in "$WORK/stale_off.err" "--stale works in guard and report modes" "--stale refused in off mode"
"$CAPGUARD" run --help >"$WORK/help.out"
expect_in "$WORK/help.out" "caching allocator" "--help says the stale check's blind spot"
expect_in "$WORK/env.out" "child guard" "grandchild inherits the env"
cd - >/dev/null
# every process (sh, env, grep, sort, the inner sh) loaded the shim and logged to the same file
n=$(grep -c '"type":"process"' "$WORK/given.jsonl")
[ "$n" -ge 5 ] && pass || fail "$n processes logged, wanted at least 5 (children covered)"
expect_in "$WORK/env.err" "capguard: $n processes used CUDA, 0 captures logged, 0 broken; 0 calls during capture (module-load 0, module-unload 0)" "summary counts every process"
# the stand-in shim logs every process as using CUDA; dash leaves through _exit, which skips
# its exit handler as it would the real shim's: the two shells are said, not "nothing to do"
expect_in "$WORK/env.err" "capguard: 2 processes ended without an exit record (killed, crashed, left through _exit, or still running): pid " "the shells without an exit record"
expect_in "$WORK/env.err" "capguard: next: a process ended without an exit record" "next step"
expect_in "$WORK/env.err" "capguard: log: $WORK/given.jsonl; details:" "log named"
expect_in "$WORK/env.err" "  capguard report $WORK/given.jsonl" "the command that reads it, on its own line"
if grep -q "^capguard:" "$WORK/env.out"; then fail "summary went to stdout"; else pass; fi

# the shim only once in nested runs
LD_PRELOAD=$real_shim "$CAPGUARD" run -q -- sh -c 'echo "$LD_PRELOAD"' >"$WORK/nest.out" 2>&1
expect_in "$WORK/nest.out" "$real_shim" "nested LD_PRELOAD"
[ "$(grep -o libcapguard "$WORK/nest.out" | wc -l)" -eq 1 ] && pass || fail "shim twice in LD_PRELOAD: $(cat "$WORK/nest.out")"

# --- a given log is appended to; the summary covers only this run
before=$(wc -l <"$WORK/given.jsonl")
CGTEST_FAKE_REFUSED=3 "$CAPGUARD" run --log "$WORK/given.jsonl" -- true >/dev/null 2>"$WORK/again.err"; rc=$?
expect_rc 0 "second run into the same log"
[ "$(wc -l <"$WORK/given.jsonl")" -gt "$before" ] && pass || fail "log not appended to"
expect_in "$WORK/again.err" "capguard: 1 process used CUDA, 1 capture, 1 broken; 3 calls during capture (module-load 3, module-unload 0): refused 3" "summary of this run only, verdicts that happened"
expect_in "$WORK/again.err" "capguard: why: a capture broke in pid " "why line"
# the stand-in logs no image hashes: the images are the processes' own count
expect_in "$WORK/again.err" "capguard: next: run it again; the 3 images loaded during capture, recorded in the priming file (kernels fake_kernel_0, fake_kernel_1, fake_kernel_2), will be loaded before capture:" "what to do next"
expect_in "$WORK/again.err" "  capguard run --log $WORK/given.jsonl -- true" "as a command on its own line, with the run's --log"

# --- report mode records nothing: advice is guard mode
CGTEST_FAKE_REFUSED=2 "$CAPGUARD" run --mode report --log "$WORK/rep.jsonl" -- true >/dev/null 2>"$WORK/rep.err"
expect_in "$WORK/rep.err" "capguard: next: run it in guard mode (the default) to record the images and prime them on the run after:" "report-mode advice"
expect_in "$WORK/rep.err" "  capguard run --log $WORK/rep.jsonl -- true" "report-mode advice: the command"

# --- no --log: a temporary log, named in the summary, that capguard report can read
run_cg tmp run -- true
expect_rc 0 "run with a temporary log"
tmplog=$(sed -n 's/^capguard: log: \(.*\) (a temporary file, kept for the command below: delete it when done); details:$/\1/p' "$WORK/tmp.err")
case $tmplog in "$WORK"/capguard-*.jsonl) pass ;; *) fail "temporary log not under \$TMPDIR: '$tmplog'" ;; esac
[ -s "$tmplog" ] && pass || fail "temporary log is empty"
"$CAPGUARD" report "$tmplog" >/dev/null 2>&1; rc=$?; expect_rc 0 "report of the temporary log"
# CAPGUARD_LOG from the environment is used when --log is not given
CAPGUARD_LOG=$WORK/envlog.jsonl "$CAPGUARD" run -- true 2>"$WORK/envlog.err" >/dev/null
[ -s "$WORK/envlog.jsonl" ] && pass || fail "CAPGUARD_LOG not honoured"
expect_not_in "$WORK/envlog.err" "temporary" "CAPGUARD_LOG is not temporary"

# --- nothing logged (here: mode off, in which the stand-in shim writes nothing) is called out
run_cg nolog run --mode off --log "$WORK/none.jsonl" -- true
expect_in "$WORK/nolog.err" "capguard: mode off: the shim stayed out of the way and logged nothing, as asked" "nothing logged in mode off is expected"

# --- the shim cannot be found: one line, exit 125, command not run
CAPGUARD_SHIM=$WORK/missing.so "$CAPGUARD" run -- touch "$WORK/ran" >"$WORK/ns.out" 2>"$WORK/ns.err"; rc=$?
expect_rc 125 "missing shim"
expect_lines "$WORK/ns.err" 1 "missing shim error"
expect_in "$WORK/ns.err" "capguard run: CAPGUARD_SHIM=$WORK/missing.so is not a readable file" "missing shim error"
[ -e "$WORK/ran" ] && fail "command ran without the shim" || pass
# --quiet: the shim's per-event reports are off (CAPGUARD_QUIET=1); the summary stays
run_cg quiet run -q -- sh -c 'echo "quiet=$CAPGUARD_QUIET"'
expect_in "$WORK/quiet.out" "quiet=1" "--quiet sets CAPGUARD_QUIET=1"
expect_in "$WORK/quiet.err" "capguard: next: " "--quiet keeps the summary"
# --error-exitcode: a broken capture decides the status, whatever the command's
CGTEST_FAKE_REFUSED=1 "$CAPGUARD" run --error-exitcode 42 --log "$WORK/ee.jsonl" -- true >/dev/null 2>&1; rc=$?
expect_rc 42 "--error-exitcode when a capture broke"
"$CAPGUARD" run --error-exitcode 42 --log "$WORK/ee2.jsonl" -- sh -c 'exit 3' >/dev/null 2>&1; rc=$?
expect_rc 3 "--error-exitcode: nothing broke, the command's status"
run_cg eebad run --error-exitcode 0 -- true; expect_rc 2 "--error-exitcode 0 is a usage error"
# an echoed option value cannot drive the terminal
run_cg esc run --mode $'gu\e[31mard' -- true; expect_rc 2 "bad --mode"
if LC_ALL=C grep -q $'\x1b' "$WORK/esc.err"; then fail "escape character echoed"; else pass; fi
expect_in "$WORK/esc.err" "not 'gu?[31mard'" "control character replaced"
# ...nor a log name: the summary names it with the escape replaced
run_cg escl run --log "$WORK/l"$'\e'"[31m.jsonl" -- true
if LC_ALL=C grep -q $'\x1b' "$WORK/escl.err"; then fail "escape character of the log name echoed"; else pass; fi
expect_in "$WORK/escl.err" "capguard: log: $WORK/l?[31m.jsonl" "log name shown sanitized"
finish
