#!/usr/bin/env bash
# The wheel end to end (CI runs it after the suite, .ci/run):
#   1. built from the checkout, offline: pip wheel --no-build-isolation --no-deps .
#      (Debian's python3-mesonpy; tools/install-deps.sh installs it);
#   2. checked: tag, contents, GLIBC_2.34 at most, glibc's libraries only (check_wheel.sh);
#   3. installed in a fresh venv with pip install --no-index; its size and the
#      install's time are printed (docs/building.md, "The wheel", quotes them);
#   4. the CLI tests run against the installed `capguard` (a venv's console
#      script) and its own shim, over the build tree's fake driver; the run,
#      doctor and shim-lookup tests again through `python -m capguard`.
#   tests/wheel/test_wheel.sh [BUILDDIR]   BUILDDIR (default build) is a build
#   tree of this checkout (tests/run-all.sh made it): the fake driver, the test programs.
set -euo pipefail
cd "$(dirname "$0")/../.."
builddir=${1:-build}
[ -f "$builddir/build.ninja" ] || { echo "test_wheel: $builddir is not a build tree (bash tests/run-all.sh makes one)" >&2; exit 2; }
out=$(mktemp -d "${TMPDIR:-/tmp}/capguard-wheel-test.XXXXXX")
trap 'rm -rf "$out"' EXIT
# The README's command, which picks a python3 with meson-python (Debian's has
# python3-mesonpy; a python3 earlier in PATH, pyenv's, may not): the same
# choice whichever python3 comes first, one without meson-python included.
py=$(bash tools/build-wheel.sh --print-python) || exit 2
fake=$out/no-mesonpy; mkdir -p "$fake"; printf '#!/bin/sh\nexit 1\n' >"$fake/python3"; chmod +x "$fake/python3"
[ "$(PATH=$fake:$PATH bash tools/build-wheel.sh --print-python)" = "$(command -v /usr/bin/python3)" ] ||
  { echo "test_wheel: tools/build-wheel.sh does not fall back to /usr/bin/python3 when python3 lacks meson-python" >&2; exit 1; }

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

t0=$(now)
bash tools/build-wheel.sh "$out/dist" >"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; echo "test_wheel: the wheel did not build" >&2; exit 1; }
t1=$(now)
whl=$(echo "$out"/dist/capguard-*.whl)
bash tests/wheel/check_wheel.sh "$whl"

venv=$out/venv
t2=$(now)
"$py" -m venv "$venv"
t3=$(now)
"$venv/bin/pip" install -q --no-index "$whl"
t4=$(now)
size=$(stat -c %s "$whl")
shim=$("$venv/bin/python" -c 'import capguard; print(capguard.shim_path())')
echo "wheel: $(basename "$whl"), $size bytes ($(awk -v s="$size" 'BEGIN { printf "%.2f", s / 1048576 }') MiB);" \
     "built in $(secs "$t0" "$t1") s; venv created in $(secs "$t2" "$t3") s;" \
     "pip install --no-index in $(secs "$t3" "$t4") s"

fail=0
# docs/building.md's size of the wheel is today's, within a tenth
doc_size=$(grep -o '([0-9,]* bytes, built by' docs/building.md | tr -dc '0-9')
if [ -z "$doc_size" ] || [ $(( (size > doc_size ? size - doc_size : doc_size - size) * 10 )) -gt "$doc_size" ]; then
  echo "test_wheel: docs/building.md gives the wheel as ${doc_size:-no} bytes, built: $size" >&2; fail=1
fi
check() { if "$@"; then :; else echo "test_wheel: FAILED: $*" >&2; fail=1; fi; }
# the installed command finds its own shim, and doctor says where it is
CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$venv/bin/capguard" doctor >"$out/doctor.out" 2>&1 || true
check grep -qF "ok      libcapguard.so: $(readlink -f "$shim") loads (installed with the command)" "$out/doctor.out"
check grep -qE "ok      native frames: file:line read by libdw [0-9.]+, linked into capguard" "$out/doctor.out"
"$venv/bin/python" -m capguard run -q -- sh -c 'echo "$LD_PRELOAD"' >"$out/pym.out" 2>&1
check grep -qxF "$(readlink -f "$shim")" "$out/pym.out"
# the docs the installed command cites are the wheel's own, and are there
"$venv/bin/capguard" --help >"$out/help.out" 2>&1
man_page=$(sed -n "s/.*'man \([^']*\)' for more.*/\1/p" "$out/help.out")
check test -f "$man_page"
"$venv/bin/capguard" report --help >"$out/report-help.out" 2>&1
trace_doc=$(sed -n 's/.*nanosecond (\([^:]*\): lining.*/\1/p' "$out/report-help.out")
check test -f "$trace_doc"
check grep -q "^# " "$trace_doc"
[ "$fail" = 0 ] || { cat "$out/doctor.out" "$out/pym.out" "$out/help.out" "$out/report-help.out"; exit 1; }

# the CLI tests against the installed command (tests/cli/lib.sh: CAPGUARD_UNDER_TEST)
export CAPGUARD_UNDER_TEST_SHIM=$shim
CAPGUARD_UNDER_TEST=$venv/bin/capguard meson test -C "$builddir" --suite cli --print-errorlogs --no-rebuild \
  >"$out/cli.txt" 2>&1 || fail=1
grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/cli.txt" | tr -s ' ' | paste -sd' ' | sed 's/^/cli tests, installed capguard: /'
# named capguard: the tests put its folder on PATH, as an install would
mkdir -p "$out/pym"
printf '#!/bin/sh\nexec "%s" -m capguard "$@"\n' "$venv/bin/python" >"$out/pym/capguard"
chmod +x "$out/pym/capguard"
CAPGUARD_UNDER_TEST=$out/pym/capguard meson test -C "$builddir" --print-errorlogs --no-rebuild \
  cli-run-real cli-doctor-real cli-shim-lookup >"$out/cli-pym.txt" 2>&1 || fail=1
grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/cli-pym.txt" | tr -s ' ' | paste -sd' ' | sed 's/^/cli tests, python -m capguard: /'
if [ "$fail" != 0 ]; then
  grep -E 'FAIL|TIMEOUT' "$out/cli.txt" "$out/cli-pym.txt" | head -40
  echo "test_wheel: FAILED"
  exit 1
fi
echo "test_wheel: ok"
