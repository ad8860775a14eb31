#!/usr/bin/env bash
# What doctor would flag is refused before anything starts, by capguard run,
# prime learn and prime check alike: a program that is not there (127, as a
# shell says it) or cannot be run (126), a CAPGUARD_* name that nothing
# reads (with the nearest name that is read), and a priming file learn
# cannot record into. Nothing is run, no log is left, and no verdict follows.
. "$(dirname "$0")/lib.sh"
use_real_shim
export TMPDIR=$WORK/tmp
mkdir -p "$TMPDIR"
left() { ls -A "$TMPDIR" | wc -l; }

# --- a missing program
for cmd in run "prime learn" "prime check"; do
  name=${cmd// /-}
  # shellcheck disable=SC2086
  run_cg "missing-$name" $cmd -- ./nope
  expect_rc 127 "$cmd of a missing program exits 127, as a shell does"
  expect_in "$WORK/missing-$name.err" "capguard $cmd: cannot run './nope': No such file or directory" "$cmd: said as what it is"
  expect_lines "$WORK/missing-$name.err" 1 "$cmd: one line, no verdict after it"
  expect_not_in "$WORK/missing-$name.err" "nothing new" "$cmd: no learn verdict"
  # shellcheck disable=SC2086
  run_cg "notfound-$name" $cmd -- capguard-no-such-program
  expect_rc 127 "$cmd of a name not in PATH"
  expect_in "$WORK/notfound-$name.err" "cannot run 'capguard-no-such-program': command not found in PATH" "$cmd: not in PATH"
done
[ "$(left)" = 0 ] && pass || fail "temporary files left: $(ls -A "$TMPDIR")"
run_cg dir run -- /tmp
expect_rc 126 "a directory is found but cannot be run"
expect_in "$WORK/dir.err" "cannot run '/tmp': it is a directory, not a program" "a directory said as one"
expect_not_in "$WORK/dir.err" "Permission denied" "not a permissions problem"
printf '#!/bin/sh\n' >"$WORK/noexec"
chmod 644 "$WORK/noexec"
if [ "$(id -u)" != 0 ]; then
  run_cg noexec run -- "$WORK/noexec"
  expect_rc 126 "a file without x"
  expect_in "$WORK/noexec.err" "is not executable (chmod +x $WORK/noexec)" "the fix"
fi

# --- an unknown CAPGUARD_* name: refused, with the nearest known one; doctor flags it
for cmd in run "prime learn" "prime check"; do
  name=${cmd// /-}
  # shellcheck disable=SC2086
  CAPGUARD_EMULATE=12020 run_cg "name-$name" $cmd -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill
  expect_rc 2 "$cmd refuses a misspelled name"
  expect_in "$WORK/name-$name.err" "capguard $cmd: CAPGUARD_EMULATE is not a capguard variable (did you mean CAPGUARD_EMULATE_DRIVER?)" "$cmd: the nearest name"
  expect_not_in "$WORK/name-$name.out" "engine:" "$cmd: the command never started"
done
CAPGUARD_READONLY=1 run_cg name-ro run -- true
expect_in "$WORK/name-ro.err" "did you mean CAPGUARD_PRIME_READONLY?" "a name it is part of"
CAPGUARD_MOD=report run_cg name-mod run -- true
expect_in "$WORK/name-mod.err" "did you mean CAPGUARD_MODE?" "one letter off"
CAPGUARD_EMULATE=12020 run_cg doctor doctor
expect_in "$WORK/doctor.out" "PROBLEM environment: CAPGUARD_EMULATE is not a capguard variable (did you mean CAPGUARD_EMULATE_DRIVER?)" "doctor flags it"
expect_not_in "$WORK/doctor.out" "CAPGUARD_*: 0 set" "doctor does not say nothing is set"
# the names capguard's own parts read are known
CAPGUARD_SHIM=$REAL_SHIM CAPGUARD_LIBCUDA=libcuda.so.1 run_cg known run -q -- true
expect_rc 0 "CAPGUARD_SHIM and CAPGUARD_LIBCUDA are known"

# --- learn onto a path it cannot record into: said before the command starts
run_cg learn-ro prime learn --prime /proc/capguard-test/fleet.cgp -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill
expect_rc 2 "learn onto a path it cannot create"
expect_in "$WORK/learn-ro.err" "capguard prime learn: priming file /proc/capguard-test/fleet.cgp cannot be created" "the reason"
expect_in "$WORK/learn-ro.err" "nothing was run" "nothing run"
expect_not_in "$WORK/learn-ro.err" "CAPGUARD_PRIME_READONLY=1" "no read-only advice: learn records"
expect_not_in "$WORK/learn-ro.err" "nothing new" "no verdict"
expect_not_in "$WORK/learn-ro.out" "engine:" "the command never started"
# the default place's missing directories are made, as the shim makes them
run_cg learn-default prime learn -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill
expect_rc 0 "learn into the default place"
[ -s "$WORK/cache/capguard/prime.d/demo_engine.cgp" ] && pass || fail "learn did not record into the default place"

# --- %q{VAR} of a variable that is not set: refused (as valgrind does); set empty, it is asked for
for cmd in run "prime learn"; do
  name=${cmd// /-}
  # shellcheck disable=SC2086
  env -u NORANK "$CAPGUARD" $cmd --log "$WORK/l.%q{NORANK}.jsonl" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill \
    >"$WORK/q-$name.out" 2>"$WORK/q-$name.err"
  rc=$?
  expect_rc 2 "$cmd refuses %q{} of an unset variable"
  expect_in "$WORK/q-$name.err" "has %q{NORANK}, but NORANK is not set, so it would expand to nothing" "$cmd: said why"
  expect_not_in "$WORK/q-$name.out" "engine:" "$cmd: the command never started"
done
NORANK= run_cg q-empty run -q --log "$WORK/e.%q{NORANK}.jsonl" -- true
expect_rc 0 "set empty, it is what was asked for"
env -u NORANK CAPGUARD_LOG="$WORK/d.%q{NORANK}.jsonl" "$CAPGUARD" doctor >"$WORK/q-doctor.out" 2>&1
expect_in "$WORK/q-doctor.out" "PROBLEM log: $WORK/d.%q{NORANK}.jsonl has %q{NORANK}, but NORANK is not set" "doctor flags it"
finish
