#!/usr/bin/env bash
# README's test command: configure, build with warnings as errors, run every test.
# Tests that need a GPU skip themselves with a visible reason when there is none.
set -uo pipefail
cd "$(dirname "$0")/.."
builddir=${BUILDDIR:-build}
# What the tests use beyond the build (the demo installs only what it needs);
# nothing when all is there.
bash tools/install-deps.sh || exit 1
# Warnings are errors here (and in CI), not in meson.build: packagers' builds
# must not stop on a warning. A build directory configured without it gets it.
if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" -Dwerror=true >/dev/null || { echo "capguard: meson setup failed" >&2; exit 1; }
elif ! grep -q '"name": "werror", "value": true' "$builddir/meson-info/intro-buildoptions.json" 2>/dev/null; then
  meson configure "$builddir" -Dwerror=true >/dev/null || { echo "capguard: meson configure -Dwerror=true failed" >&2; exit 1; }
fi
ninja -C "$builddir" >/dev/null || { ninja -C "$builddir"; exit 1; }
meson test -C "$builddir" --print-errorlogs "$@" 2>&1 | tee "$builddir/test-summary.txt"
rc=${PIPESTATUS[0]}
# Say why each skipped test was skipped (its own first line of output).
python3 - "$builddir/meson-logs/testlog.json" <<'PY' || true
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t.get("result") == "SKIP":
        why = next((l for l in (t.get("stdout") or "").splitlines() if l.strip()), "no reason given")
        print(f"skipped: {t['name']}: {why}")
PY
# One plain closing line that any CI reader understands.
ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$builddir/test-summary.txt")
fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$builddir/test-summary.txt")
skip=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$builddir/test-summary.txt")
timeout=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$builddir/test-summary.txt")
echo "${ok:-0} passed, $(( ${fail:-0} + ${timeout:-0} )) failed, ${skip:-0} skipped"
exit "$rc"
