#!/usr/bin/env bash
# Conventions of every command: --help, --version, usage errors (exit 2, one line on stderr).
. "$(dirname "$0")/lib.sh"

run_cg help --help;            expect_rc 0 "capguard --help"; expect_in "$WORK/help.out" "usage: capguard" "--help"
for c in run report doctor; do
  run_cg "h$c" "$c" --help;    expect_rc 0 "capguard $c --help"; expect_in "$WORK/h$c.out" "usage: capguard $c" "$c --help"
  run_cg "hh$c" help "$c";     expect_rc 0 "capguard help $c"; expect_in "$WORK/hh$c.out" "usage: capguard $c" "help $c"
  if [ -s "$WORK/h$c.err" ]; then fail "$c --help wrote to stderr"; else pass; fi
done
run_cg ver --version;          expect_rc 0 "--version"; expect_in "$WORK/ver.out" "capguard " "--version"
expect_lines "$WORK/ver.out" 1 "--version is one line"

# usage errors: exit 2, exactly one line on stderr naming what is wrong, nothing on stdout
usage_error() { # NAME WANT-SUBSTRING ARGS...
  local name=$1 want=$2; shift 2
  run_cg "$name" "$@"
  expect_rc 2 "capguard $*"
  expect_lines "$WORK/$name.err" 1 "capguard $* error"
  expect_in "$WORK/$name.err" "$want" "capguard $*"
  if [ -s "$WORK/$name.out" ]; then fail "capguard $*: wrote to stdout on a usage error"; else pass; fi
}
usage_error none    "missing command"                    
usage_error unknown "unknown command 'frobnicate'"       frobnicate
usage_error badopt  "unknown option '--bogus'"           --bogus
usage_error runnone "capguard run: missing command after --; usage: capguard run" run
usage_error rundash "capguard run: missing command after --" run --mode guard --
usage_error runmode "--mode must be guard, report or off, not 'loud'" run --mode loud -- true
usage_error runemu  "--emulate-driver needs a driver version like 12020" run --emulate-driver 12.2 -- true
usage_error runnoval "--log needs a value" run --log
usage_error runopt  "capguard run: unknown option '--frob'" run --frob -- true
usage_error repopt  "capguard report: unknown option '--xml'" report --xml x.jsonl
usage_error repnone "capguard report: no log given" report
usage_error repnoval "--html needs a value" report --html
usage_error docopt  "capguard doctor: unknown option '--fix'" doctor --fix
usage_error docarg  "capguard doctor: unexpected argument 'now'" doctor now

# unreadable input is exit 2 too, one line naming the file and what to do
run_cg missing report "$WORK/nope.jsonl"
expect_rc 2 "report of a missing file"
expect_lines "$WORK/missing.err" 1 "missing file error"
expect_in "$WORK/missing.err" "cannot read '$WORK/nope.jsonl': No such file or directory" "missing file error"

# an unwritable --html target
run_cg badhtml report --html "$WORK/no/such/dir/r.html" "$DATA/run2.jsonl"
expect_rc 2 "report --html to a missing directory"
expect_in "$WORK/badhtml.err" "cannot write '$WORK/no/such/dir/r.html'" "--html error"

# output that pipes cleanly: a closed pipe is not a crash
"$CAPGUARD" report "$DATA/run1.jsonl" 2>"$WORK/pipe.err" | head -1 >/dev/null
st=${PIPESTATUS[0]}
if [ "$st" -ge 128 ] && [ "$st" -ne 141 ]; then fail "report into a closed pipe died with $st"; else pass; fi
finish
