#!/usr/bin/env bash
# The command as an operator meets it, over the real shim and the
# fake driver (CUDA 12.2 unless said): verdicts on stderr, the inner summary
# never contradicting them; commands that paste and run (the full path when
# capguard is not on PATH, the log always, the %p pattern read back, one
# command per line); bad priming files named before the engine starts.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=12020
app=("$VLLM_LIKE" --workers 1 "$CUBIN" cg_test_fill)
offpath=/usr/bin:/bin   # a shell where capguard is not on PATH

# --- 1. prime learn / check: verdicts on stderr, stdout the engine's alone; the
# inner run summary leaves what to do to the verdict
"$CAPGUARD" prime learn --prime "$WORK/l.cgp" -- "${app[@]}" >"$WORK/learn.out" 2>"$WORK/learn.err"; rc=$?
expect_rc 1 "learn on 12.2 is incomplete"
expect_in "$WORK/learn.err" "capguard prime learn: incomplete: this driver (12.2)" "learn's verdict on stderr"
expect_not_in "$WORK/learn.out" "capguard" "learn: nothing of capguard's on stdout"
expect_not_in "$WORK/learn.err" "capguard: faster:" "the inner summary does not suggest prime learn again"
expect_not_in "$WORK/learn.err" "capguard: next:" "the inner summary gives no next step of its own"
cp "$WORK/l.cgp" "$WORK/empty.cgp"   # the same file, its one record removed
"$CAPGUARD" prime rm "$("$CAPGUARD" prime list "$WORK/empty.cgp" | awk '/cg_test_fill/ {print $1}')" "$WORK/empty.cgp" >/dev/null 2>&1
"$CAPGUARD" prime check --prime "$WORK/empty.cgp" -- "${app[@]}" >"$WORK/check.out" 2>"$WORK/check.err"; rc=$?
expect_rc 1 "check of a file that lacks the load fails"
expect_in "$WORK/check.err" "capguard prime check: FAIL: " "check's verdict on stderr"
expect_not_in "$WORK/check.out" "capguard" "check: nothing of capguard's on stdout"
expect_not_in "$WORK/check.err" "nothing was recorded" "the inner summary does not contradict the check"

# --- 3. commands that paste: the full path when capguard is not on PATH; the log always
PATH=$offpath "$CAPGUARD" run --log "$WORK/r.jsonl" --prime "$WORK/r.cgp" -- "${app[@]}" >/dev/null 2>"$WORK/r.err"
expect_in "$WORK/r.err" "  $CAPGUARD run --log $WORK/r.jsonl --prime $WORK/r.cgp -- ${app[*]}" "next: the full path, capguard not on PATH, and the run's --log"
expect_in "$WORK/r.err" "  $CAPGUARD report $WORK/r.jsonl" "details: the full path and the log"
details=$(grep "^  $CAPGUARD report " "$WORK/r.err")
(PATH=$offpath; eval "$details") >"$WORK/details.out" 2>&1; rc=$?
expect_rc 1 "the details command runs as printed (exit 1: a capture broke)"
expect_in "$WORK/details.out" "capguard report: 1 log, " "and reports"
# one command per line in the faster: advice
sed -n '/^capguard: faster:/,/^capguard: /p' "$WORK/r.err" | grep -c -- " -- " >"$WORK/nf"
[ "$(cat "$WORK/nf")" -eq 3 ] && pass || fail "faster: $(cat "$WORK/nf") command lines, wanted 3"
if sed -n '/^capguard: faster:/,/^capguard: log/p' "$WORK/r.err" | grep -- " -- .* -- " >/dev/null; then
  fail "faster: two commands on one line"; else pass; fi
while read -r line; do
  case $line in "$CAPGUARD prime learn "*|"$CAPGUARD prime check "*|"$CAPGUARD run --log $WORK/r.jsonl --rescue "*) pass ;;
    *) fail "faster: a command line that is not a command: '$line'" ;; esac
done < <(sed -n '/^capguard: faster:/,/^capguard: log/p' "$WORK/r.err" | grep -- " -- ")
# %p: report reads the pattern capguard run was given
mkdir -p "$WORK/pp"
"$CAPGUARD" run --log "$WORK/pp/log.%p.jsonl" --prime "$WORK/pp.cgp" -- "$VLLM_LIKE" --workers 2 "$CUBIN" cg_test_fill >/dev/null 2>"$WORK/pp.err"
expect_in "$WORK/pp.err" "  capguard report $WORK/pp/log.%p.jsonl" "%p: the details command names the pattern"
run_cg ppr report "$WORK/pp/log.%p.jsonl"
expect_rc 1 "report of the pattern reads it (a capture broke)"
n=$(ls "$WORK"/pp/log.*.jsonl | wc -l)
expect_in "$WORK/ppr.out" "capguard report: $n logs, " "report read every per-process file"
run_cg ppnone report "$WORK/pp/none.%p.jsonl"
expect_rc 2 "a pattern that names no file"
expect_in "$WORK/ppnone.err" "no file matches '$WORK/pp/none.%p.jsonl'" "said so, in one line"

# --- 2. bad priming files named before the engine starts, and capguard doctor --prime
head -c 4096 /dev/urandom >"$WORK/g.cgp"
cp "$WORK/g.cgp" "$WORK/g-before.cgp"
"$CAPGUARD" run --prime "$WORK/g.cgp" --log "$WORK/g.jsonl" -- "${app[@]}" >/dev/null 2>"$WORK/g.err"
first=$(head -n 1 "$WORK/g.err")
case $first in "capguard run: priming file $WORK/g.cgp is not a priming file the shim can read (not a capguard priming file): move it away, or pass another --prime; the command runs without priming") pass ;;
  *) fail "run: the bad file is not named first: '$first'" ;; esac
cmp -s "$WORK/g.cgp" "$WORK/g-before.cgp" && pass || fail "the bad file was changed"
expect_in "$WORK/g.err" "  capguard doctor --prime $WORK/g.cgp" "the summary's check names the file"
run_cg doc doctor --prime "$WORK/g.cgp"
expect_rc 1 "doctor --prime: a problem"
expect_in "$WORK/doc.out" "PROBLEM priming file: $WORK/g.cgp is not a priming file the shim can read" "doctor --prime names what is wrong"
run_cg docok doctor --prime "$WORK/l.cgp"
expect_in "$WORK/docok.out" "priming file: $WORK/l.cgp: 1 image (sm_90), intact" "doctor --prime: a good file"
run_cg docnope doctor --prime "$WORK/nope.cgp"
expect_in "$WORK/docnope.out" "PROBLEM priming file: $WORK/nope.cgp does not exist" "doctor --prime: a typo"
run_cg docbare doctor --prime
expect_rc 2 "doctor --prime without a file"
"$CAPGUARD" prime check --prime "$WORK/nope.cgp" -- "${app[@]}" >"$WORK/nope.out" 2>"$WORK/nope.err"; rc=$?
expect_rc 2 "check of a file that does not exist"
expect_in "$WORK/nope.err" "capguard prime check: priming file $WORK/nope.cgp does not exist: nothing to check" "the typo named"
[ -s "$WORK/nope.out" ] && fail "check ran the engine for a missing file" || pass
"$CAPGUARD" prime learn --prime "$WORK/g.cgp" -- "${app[@]}" >"$WORK/glearn.out" 2>"$WORK/glearn.err"; rc=$?
expect_rc 2 "learn into a file that is not a priming file"
[ -s "$WORK/glearn.out" ] && fail "learn ran the engine for a bad file" || pass
# over the cap: said before the run, with the command that prunes it
CAPGUARD_PRIME_MAX=1K "$CAPGUARD" doctor --prime "$WORK/g.cgp" >"$WORK/cap.out" 2>&1
expect_in "$WORK/cap.out" "is 4096 bytes, over CAPGUARD_PRIME_MAX (1024): the shim would not read it; prune it (capguard prime prune --max-size 1M $WORK/g.cgp)" "over the cap"

# --- 7. small ones
run_cg listhelp prime list --help
expect_rc 0 "prime list --help"
expect_in "$WORK/listhelp.out" "usage: capguard prime list [FILE]" "prime list --help: its own usage"
expect_not_in "$WORK/listhelp.out" "usage: capguard prime <command>" "not the generic help"
run_cg list prime list "$WORK/l.cgp"
head -n 1 "$WORK/list.out" | grep -qE ' last needed +kernels$' && pass || fail "list header: $(head -n 1 "$WORK/list.out")"
run_cg merge1 prime merge "$WORK/m1.cgp" "$WORK/l.cgp"
expect_in "$WORK/merge1.out" "$WORK/m1.cgp: 1 image" "one image, not 1 images"
expect_not_in "$WORK/merge1.out" "1 images" "plural"
run_cg rescue run --rescue --mode report -- true
expect_rc 2 "--rescue with --mode report is refused"
expect_in "$WORK/rescue.err" "capguard run: --rescue works in guard mode only, not with --mode report" "said why"
CAPGUARD_MODE=off "$CAPGUARD" run --rescue -- true >/dev/null 2>"$WORK/rescue2.err"; rc=$?
expect_rc 2 "--rescue with CAPGUARD_MODE=off is refused"
expect_in "$WORK/rescue2.err" "not with CAPGUARD_MODE=off" "said which setting"

# --- 5. the trace: exact times, named threads; the page: no mid-token breaks, told-apart greys, commands to copy
t0=1700000000000000000
printf '%s\n' \
 '{"v":1,"type":"process","pid":41,"time_ns":'$t0',"ppid":1,"argv":["./e"],"mode":"guard","driver_version":12020,"emulate_driver":0,"version":"0.1.0"}' \
 '{"v":1,"type":"event","pid":41,"time_ns":'$((t0 + 1001))',"event":"module-load","call":"cuModuleLoadData","verdict":"refused","result":900,"driver_result":900,"driver_version":12020,"emulate_driver":0,"tid":43,"thread_mode":"global","capture":{"id":1,"stream":"0x10","mode":"global","tid":41,"status":"invalidated","began":"e.py:1 in cap"},"prohibitors":1,"module":"0x0","image":{"kind":"cubin","size":64,"sm":90,"archs":[90],"hash":"00112233445566778899aabbccddeeff","kernels":["cg_test_fill"],"kernels_truncated":false},"native_stack":[],"python_stack":[]}' \
 '{"v":1,"type":"capture","pid":41,"time_ns":'$((t0 + 5000))',"id":1,"stream":"0x10","mode":"global","tid":41,"status":"failed","begin_ns":'$((t0 + 1))',"end_ns":'$((t0 + 5003))',"events":1,"began":"e.py:1 in cap","end_result":901,"broken_by":{"call":"cuModuleLoadData","event":"module-load","verdict":"refused","result":900,"tid":43,"time_ns":'$((t0 + 1001))'}}' \
 >"$WORK/t.jsonl"
run_cg tr report --trace "$WORK/t.json" --html "$WORK/t.html" "$WORK/t.jsonl"
python3 - "$WORK/t.json" >"$WORK/tr.check" 2>&1 <<'PY' && pass || fail "trace: $(cat "$WORK/tr.check")"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
cap = [e for e in ev if e["ph"] == "X"][0]
call = [e for e in ev if e["ph"] == "i"][0]
# exact to the nanosecond: 1 ns and 1001 ns after the first thing in the log, 5002 ns long
assert round(cap["ts"] * 1000) == 1 and round(call["ts"] * 1000) == 1001, (cap["ts"], call["ts"])
assert round(cap["dur"] * 1000) == 5002, cap["dur"]
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert names[41] == "main thread 41, began capture 1", names
assert names[43] == "thread 43", names
assert d["otherData"]["capguard_epoch_ns"] == 1700000000000000000
assert "CLOCK_REALTIME" in d["otherData"]["clock"]
PY
expect_not_in "$WORK/t.html" "overflow-wrap:anywhere" "the page never breaks a name mid-token"
# (the legend keys the verdicts a page's calls have: a log with the three deferrals)
{ head -1 "$WORK/t.jsonl"
  for v in deferred deferred-free deferred-destroy; do sed -n '2s/"verdict":"refused"/"verdict":"'$v'"/p' "$WORK/t.jsonl"; done
} >"$WORK/d.jsonl"
"$CAPGUARD" report --html "$WORK/d.html" "$WORK/d.jsonl" >/dev/null 2>&1
greys=$(grep -o 'background:#[0-9a-f]*"></i>call deferred[a-z-]*' "$WORK/d.html" | cut -d'"' -f1 | sort -u | wc -l)
[ "$greys" -eq 3 ] && pass || fail "the three deferral colours: $greys distinct, wanted 3"
expect_in "$WORK/t.html" '<pre class="cmd"><code>capguard run -- ./e</code></pre>' "the page's advice: a command to copy, alone"

# --- 4. the shared default priming file: a program does not pay for another's images
export FAKECUDA_DRIVER_VERSION=13000 CAPGUARD_MODE=guard
multi=$SOURCE_ROOT/tests/data/kernels_multi.fatbin
a=("$VLLM_LIKE" --workers 1 "$CUBIN" cg_test_fill)
b=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)
"$CAPGUARD" run --log "$WORK/a.jsonl" -- "${a[@]}" >/dev/null 2>"$WORK/a.err"
"$CAPGUARD" run --log "$WORK/b.jsonl" -- "${b[@]}" >/dev/null 2>"$WORK/b.err"
[ -s "$WORK/cache/capguard/prime.d/vllm_like.cgp" ] && pass || fail "program a's own file: $(ls -R "$WORK/cache" 2>&1)"
[ -s "$WORK/cache/capguard/prime.d/demo_engine.cgp" ] && pass || fail "program b's own file"
[ -e "$WORK/cache/capguard/prime.cgp" ] && fail "the shared file was written" || pass
summary_field() { grep '"type":"summary"' "$2" | grep -o "\"$1\":[0-9-]*" | cut -d: -f2; }
[ "$(summary_field primed_loaded "$WORK/b.jsonl" | sort -u)" = 0 ] && pass || fail "b preloaded a's image"
# an interpreter's program is its script or module
printf 'echo "prime=$CAPGUARD_PRIME"\n' >"$WORK/show.sh"
"$CAPGUARD" run -q -- sh "$WORK/show.sh" >"$WORK/show.out" 2>/dev/null
expect_in "$WORK/show.out" "prime=$WORK/cache/capguard/prime.d/sh-show.sh.cgp" "sh SCRIPT: keyed by the script"
"$CAPGUARD" run -q -- sh -c 'echo "prime=$CAPGUARD_PRIME"' >"$WORK/show2.out" 2>/dev/null
n=$(sed -n 's|^prime=.*/prime.d/\(.*\)$|\1|p' "$WORK/show2.out"); [ "${#n}" -le 104 ] && [ -n "$n" ] && pass || fail "sh -c TEXT: a short file name, got '$n'"
CAPGUARD_PRIME=$WORK/named.cgp "$CAPGUARD" run -q -- sh "$WORK/show.sh" >"$WORK/show3.out" 2>/dev/null
expect_in "$WORK/show3.out" "prime=$WORK/named.cgp" "a file named by CAPGUARD_PRIME is used as named"
run_cg docdefault doctor
expect_in "$WORK/docdefault.out" "capguard run, given no --prime, uses one per program, $WORK/cache/capguard/prime.d/PROGRAM.cgp" "doctor says where run's files are"
# prime learn picks the same file as run for the same command
"$CAPGUARD" prime learn -- "${b[@]}" >/dev/null 2>"$WORK/bl.err"
expect_in "$WORK/bl.err" "recorded into $WORK/cache/capguard/prime.d/demo_engine.cgp" "learn: the program's own file"
# one file named for both: the summary says what was preloaded and not used
"$CAPGUARD" run --prime "$WORK/shared.cgp" --log "$WORK/s1.jsonl" -- "$DEMO_ENGINE" "$multi" cg_test_fill >/dev/null 2>&1
"$CAPGUARD" run --prime "$WORK/shared.cgp" --log "$WORK/s2.jsonl" -- "${b[@]}" >/dev/null 2>"$WORK/s2.err"
run_cg s2r report "$WORK/s2.jsonl"
if [ "$(summary_field primed_unused "$WORK/s2.jsonl" | sort -n | tail -1)" -ge 1 ]; then
  expect_in "$WORK/s2.err" "capguard: note: a process preloaded 1 image from $WORK/shared.cgp that it never used" "summary: preloaded and not used"
  expect_in "$WORK/s2r.out" "a process preloaded 1 image from $WORK/shared.cgp that it never used" "report: preloaded and not used"
else
  fail "the setup did not preload an unused image: $(grep summary "$WORK/s2.jsonl")"
fi
unset CAPGUARD_MODE

# --- 6. the docs say what the code does
sed 's/\\-/-/g' "$MANPAGE" >"$WORK/man"
for sub in list show verify prune merge rm learn check; do
  expect_in "$WORK/man" "capguard prime $sub" "man page: prime $sub"
done
for w in "device allocations" synchronisation "event queries" "doctor [--prime file]"; do
  expect_in "$WORK/man" "$w" "man page: $w"
done
"$CAPGUARD" run --help >"$WORK/runhelp"
expect_not_in "$WORK/runhelp" "only log" "run --help: report mode does not only log"
expect_in "$WORK/runhelp" "report each forbidden call (stderr" "run --help: report mode reports on stderr"
readme=$SOURCE_ROOT/README.md
expect_in "$readme" "meson install -C build        # as root (else prefix sudo): then \`capguard\` is on PATH" "README: how capguard gets on PATH"
expect_in "$readme" "[docs/benchmarks.md](docs/benchmarks.md)" "README links the benchmark page"
expect_not_in "$readme" "| call | H100 run 1 |" "the benchmark tables left the README"
expect_in "$SOURCE_ROOT/docs/benchmarks.md" "| call | H100 run 1 |" "the benchmark tables are in docs/benchmarks.md"
# --- the commands the summary gives keep the run's own options the log does not
# hold (--log, -q, --error-exitcode); a priming file said to be unusable is not
# named again in the faster: commands
cd "$WORK" || exit 1
FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_MODE= "$CAPGUARD" run -q --error-exitcode 3 --log 'kept%p.jsonl' --prime "$WORK/kept.cgp" -- "$STARTUP_LIKE" >/dev/null 2>"$WORK/kept.err"; rc=$?
expect_rc 3 "--error-exitcode 3 on a broken capture"
grep -A1 '^capguard: next: run it again' "$WORK/kept.err" | tail -1 >"$WORK/kept-next"
expect_in "$WORK/kept-next" "capguard run --log kept%p.jsonl -q --error-exitcode 3 --prime $WORK/kept.cgp -- $STARTUP_LIKE" "next: keeps --log, -q and --error-exitcode"
expect_in "$WORK/kept.err" "capguard run --log kept%p.jsonl -q --error-exitcode 3 --rescue --prime $WORK/kept.cgp -- $STARTUP_LIKE" "faster: --rescue keeps them too"
expect_in "$WORK/kept.err" "capguard prime learn --prime $WORK/kept.cgp -- $STARTUP_LIKE" "prime learn takes none of run's options"
cd - >/dev/null || exit 1
mkdir "$WORK/primedir"
FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_MODE= "$CAPGUARD" run --prime "$WORK/primedir" -- "$STARTUP_LIKE" >/dev/null 2>"$WORK/dir.err"; rc=$?
expect_in "$WORK/dir.err" "capguard run: priming file $WORK/primedir is a directory" "a directory for --prime is said"
[ "$(grep -c -- "--prime $WORK/primedir " "$WORK/dir.err")" -eq 0 ] && pass || fail "a priming path said to be a directory is given again in commands: $(grep -- "--prime $WORK/primedir " "$WORK/dir.err")"
expect_not_in "$WORK/dir.err" "capguard: faster:" "no faster: block through a priming file that cannot be used"
# --- a pid that execs several programs (pyenv's shims: env, bash, then python) is one process
"$CAPGUARD" run --log "$WORK/execs.jsonl" -- sh -c 'exec env sh -c "exec env true"' >/dev/null 2>&1
[ "$(grep -c '"type":"start"' "$WORK/execs.jsonl")" -ge 3 ] && pass || fail "the shim did not start in each exec"
run_cg execs report "$WORK/execs.jsonl"
expect_in "$WORK/execs.out" "capguard report: 1 log, 1 process," "execs in one pid: one process"

# --- prime list right after capguard run (no --prime anywhere): the file the run used, said
home=$WORK/fresh-home; mkdir -p "$home"
(export HOME=$home XDG_CACHE_HOME=$home/cache; unset CAPGUARD_PRIME
 FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run -q -- "$STARTUP_LIKE" >/dev/null 2>&1
 "$CAPGUARD" prime list >"$WORK/plist.out" 2>"$WORK/plist.err"; echo $? >"$WORK/plist.rc"
 FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run -q -- "${app[@]}" >/dev/null 2>&1
 "$CAPGUARD" prime list >"$WORK/plist2.out" 2>"$WORK/plist2.err"; echo $? >"$WORK/plist2.rc")
[ "$(cat "$WORK/plist.rc")" = 0 ] && pass || fail "prime list after one run: exit $(cat "$WORK/plist.rc")"
expect_in "$WORK/plist.err" "listing $home/cache/capguard/prime.d/startup_like.cgp, the file capguard run uses for that program" "prime list: the program's own file, said"
expect_in "$WORK/plist.out" " k_a" "prime list: what that run recorded"
[ "$(cat "$WORK/plist2.rc")" = 1 ] && pass || fail "prime list with two programs' files: exit $(cat "$WORK/plist2.rc"), wanted 1"
expect_in "$WORK/plist2.err" "capguard run without --prime uses each program's own file in $home/cache/capguard/prime.d/ (startup_like.cgp, vllm_like.cgp): name one" "prime list: which files, when several"
expect_in "$WORK/plist2.err" "name one, e.g. the one written last: capguard prime list $home/cache/capguard/prime.d/vllm_like.cgp" "prime list: the example is the file the latest run used"
n=$(wc -l <"$readme"); [ "$n" -le 200 ] && pass || fail "README: $n lines, more than the 200 a newcomer reads in minutes"
# The demo's two opening commands stay first, as written.
[ "$(grep -m1 -A2 '^```sh$' "$readme" | sed -n '2,3p' | cut -d' ' -f1-2)" = "bash tools/demo/run-demo.sh
bash tests/run-all.sh" ] && pass || fail "README: the first commands are not the demo's and the tests'"
finish
