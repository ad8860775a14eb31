# Shared helpers of the CLI tests (sourced). Each test gets from meson:
#   CAPGUARD   the capguard executable    DATA  tests/cli/data
#   FAKE_SHIM  stand-in libcapguard.so    FAKE_DRIVER_DIR  dir with a fake libcuda.so.1
set -u
# The command under test: the build tree's, or one installed elsewhere (the
# wheel's, in a venv: tests/wheel/test_wheel.sh) with
#   CAPGUARD_UNDER_TEST=/venv/bin/capguard CAPGUARD_UNDER_TEST_SHIM=/venv/.../capguard/lib/libcapguard.so
# The installed command then runs with its own shim (REAL_SHIM), over the
# fake driver and the test programs of the build tree.
if [ -n "${CAPGUARD_UNDER_TEST:-}" ]; then
  CAPGUARD=$CAPGUARD_UNDER_TEST
  REAL_SHIM=${CAPGUARD_UNDER_TEST_SHIM:?CAPGUARD_UNDER_TEST_SHIM: the shim installed with CAPGUARD_UNDER_TEST}
fi
# the harness's own CAPGUARD_* names stay shell variables, out of the
# environment of what the tests run: capguard refuses a name it does not read
export -n CAPGUARD_UBSAN CAPGUARD_INSTALLED_SHIM CAPGUARD_UNDER_TEST CAPGUARD_UNDER_TEST_SHIM CAPGUARD_HTML_PNG 2>/dev/null
failures=0
checks=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/capguard-cli-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# meson points LD_LIBRARY_PATH at the fake driver it built; tests choose for themselves
unset LD_LIBRARY_PATH
export NO_COLOR=1   # plain text to compare; colour has its own test
# capguard on PATH, as after an install: its advice then says "capguard ..."
# (test_cli_paste.sh checks the full path it prints when it is not)
PATH=$(dirname "$CAPGUARD"):$PATH

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { checks=$((checks + 1)); }

# run_cg NAME ARGS...: run capguard, stdout in $WORK/NAME.out, stderr in $WORK/NAME.err, status in $rc
run_cg() {
  local name=$1; shift
  "$CAPGUARD" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null
  rc=$?
}

expect_rc() { # expect_rc WANT WHAT
  if [ "$rc" -eq "$1" ]; then pass; else fail "$2: exit $rc, wanted $1"; fi
}
expect_in() { # expect_in FILE FIXED-STRING WHAT
  if grep -qF -- "$2" "$1"; then pass; else fail "$3: '$2' not in $(basename "$1"):"; sed 's/^/    | /' "$1" >&2; fi
}
expect_not_in() {
  if grep -qF -- "$2" "$1"; then fail "$3: '$2' unexpectedly in $(basename "$1")"; else pass; fi
}
expect_lines() { # expect_lines FILE N WHAT
  local n; n=$(wc -l <"$1")
  if [ "$n" -eq "$2" ]; then pass; else fail "$3: $n lines in $(basename "$1"), wanted $2"; sed 's/^/    | /' "$1" >&2; fi
}
finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures of $((checks + failures)) checks failed" >&2; exit 1; fi
  echo "all $checks checks passed"
  exit 0
}

# use_real_shim: the project's own libcapguard.so and fake libcuda.so.1 (tests/fakecuda),
# found by dlopen("libcuda.so.1") through LD_LIBRARY_PATH, like a real driver.
use_real_shim() {
  export CAPGUARD_SHIM=$REAL_SHIM LD_LIBRARY_PATH=$FAKECUDA_DIR
  unset CAPGUARD_LOG CAPGUARD_MODE CAPGUARD_PRIME CAPGUARD_EMULATE_DRIVER CAPGUARD_RESCUE CAPGUARD_QUIET
  unset FAKECUDA_DRIVER_VERSION FAKECUDA_SM FAKECUDA_TRACE
  export XDG_CACHE_HOME=$WORK/cache HOME=$WORK   # the default priming file stays in the test
}
# field NAME FILE: the values of a top-level number field on "process" lines (one for
# each process that used the driver; every process also has a "start" line)
process_field() { grep '"type":"process"' "$2" | grep -o "\"$1\":[0-9-]*" | cut -d: -f2; }
