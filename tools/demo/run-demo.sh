#!/usr/bin/env bash
# capguard's built-in demo, on any machine (no GPU: the fake driver stands in
# for an older one, 12.2, that refuses module loads during capture).
# Sets up (Debian packages), builds, then runs demo-steps.sh: run 1 of a small
# "engine" breaks its CUDA graph capture and capguard says why; run 2, same
# command, works because capguard primed the kernel; capguard report reads both.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bash tools/install-deps.sh --demo   # building only: the tests install the rest
# -Dwerror=true as tests/run-all.sh: README's two commands share one build
[ -f build/build.ninja ] || meson setup build -Dwerror=true >/dev/null
ninja -C build >/dev/null
exec bash tools/demo/demo-steps.sh build
