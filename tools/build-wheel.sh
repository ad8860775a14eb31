#!/usr/bin/env bash
# Builds capguard's wheel from this checkout, offline, into dist/ (ignored by
# git): python3 -m pip wheel --no-build-isolation --no-deps, with a python3
# that has meson-python. The first python3 on PATH may not have it (pyenv's,
# a venv's); Debian's /usr/bin/python3 does once tools/install-deps.sh ran
# (python3-mesonpy). The wheel runs with any Python 3 (docs/building.md).
#   bash tools/build-wheel.sh [OUTDIR]     OUTDIR: where the wheel goes (default dist)
#   bash tools/build-wheel.sh --print-python   the python3 it would use, and nothing else
set -euo pipefail
cd "$(dirname "$0")/.."
py=
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import mesonpy' 2>/dev/null; then
    py=$candidate
    break
  fi
done
if [ -z "$py" ]; then
  echo "build-wheel: no python3 with meson-python (neither $(command -v python3 || echo python3) nor /usr/bin/python3); run: bash tools/install-deps.sh" >&2
  exit 2
fi
if [ "${1:-}" = --print-python ]; then
  command -v "$py"
  exit 0
fi
out=${1:-dist}
"$py" -m pip wheel --no-build-isolation --no-deps --no-index -w "$out" .
ls "$out"/capguard-*.whl
