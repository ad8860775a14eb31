#!/usr/bin/env bash
# README's set-up on a fresh Debian machine: the demo installs only what the
# demo needs (no Prometheus, valgrind, strace or clang); a machine without
# cuda.h stops at once with the one command that gets it, both in
# install-deps.sh and in meson setup; the install line needs no sudo as root.
. "$(dirname "$0")/lib.sh"
deps=$SOURCE_ROOT/tools/install-deps.sh
bash "$deps" --demo --print >"$WORK/demo.txt" || fail "install-deps.sh --demo --print"
bash "$deps" --print >"$WORK/all.txt" || fail "install-deps.sh --print"
for p in meson ninja-build gcc libdw-dev check libjansson-dev; do
  grep -qx "$p" "$WORK/demo.txt" && pass || fail "the demo needs $p to build"
done
for p in prometheus prometheus-node-exporter valgrind strace clang python3-mesonpy; do
  grep -qx "$p" "$WORK/demo.txt" && fail "the demo installs $p, which only the tests use" || pass
  grep -qx "$p" "$WORK/all.txt" && pass || fail "the tests' list lacks $p"
done
grep -q 'install-deps.sh --demo' "$SOURCE_ROOT/tools/demo/run-demo.sh" && pass || fail "run-demo.sh does not install the demo's list alone"
# README's commands: none starts with sudo (a root container has none)
sed -n '/^```sh$/,/^```$/p' "$SOURCE_ROOT/README.md" | sed -n '1,/^```$/p' >"$WORK/first-block"
expect_in "$WORK/first-block" "meson install -C build" "README installs with meson install"
if grep -q '^sudo ' "$WORK/first-block"; then fail "README's set-up needs sudo: $(grep '^sudo ' "$WORK/first-block")"; else pass; fi

# --- no cuda.h: meson setup stops at once, saying the command that gets it
mkdir -p "$WORK/empty"
start=$(date +%s)
env -u CUDA_PATH -u CUDA_HOME -u CUDA_ROOT meson setup "$WORK/b" "$SOURCE_ROOT" -Dtoolkit_include="$WORK/empty" \
  >"$WORK/setup.out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && pass || fail "meson setup went on without cuda.h"
expect_in "$WORK/setup.out" "apt-get install nvidia-cuda-dev" "meson setup: the command that gets cuda.h"
[ $(($(date +%s) - start)) -lt 60 ] && pass || fail "meson setup took more than a minute to stop"
# install-deps.sh, on a machine where no cuda.h is where meson looks: stops before installing anything
if [ "$(id -u)" = 0 ] && unshare --mount true 2>/dev/null; then
  env -u CUDA_PATH -u CUDA_HOME -u CUDA_ROOT unshare --mount bash -c '
    for d in /usr/local/cuda/include /opt/cuda/include /usr/include; do
      [ -f "$d/cuda.h" ] && mount -t tmpfs tmpfs "$d"
    done
    PATH=/nonexistent:$PATH bash "$1" --demo' bash "$deps" >"$WORK/deps.out" 2>&1
  rc=$?
  expect_rc 1 "install-deps.sh stops without cuda.h"
  expect_in "$WORK/deps.out" "cuda.h (the CUDA driver API header) is not installed" "it says what is missing"
  expect_in "$WORK/deps.out" "apt-get install nvidia-cuda-dev" "and the command that gets it"
  expect_not_in "$WORK/deps.out" "capguard: installing" "nothing installed first"
else
  echo "note: not root or no mount namespace here; install-deps.sh's stop without cuda.h was not run"
fi
finish
