#!/usr/bin/env bash
# capguard run finds the shim without CAPGUARD_SHIM: in a build tree
# (<dir>/../shim/libcapguard.so) and next to an installed command
# (<dir>/../lib*/libcapguard.so), relative to the real executable.
. "$(dirname "$0")/lib.sh"
unset CAPGUARD_SHIM
export TMPDIR=$WORK
if [ -n "${CAPGUARD_UNDER_TEST:-}" ]; then
  # An installed command (the wheel's launcher in a venv) cannot be copied
  # into a layout: it must find the shim installed with it, by itself, and
  # doctor must say where that is.
  "$CAPGUARD" run -q -- sh -c 'echo "$LD_PRELOAD"' >"$WORK/out" 2>"$WORK/err"; rc=$?
  expect_rc 0 "installed command runs without CAPGUARD_SHIM"
  expect_in "$WORK/out" "$(readlink -f "$REAL_SHIM")" "installed command preloads its own shim"
  CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/doc" 2>&1
  expect_in "$WORK/doc" "ok      libcapguard.so: $(readlink -f "$REAL_SHIM") loads (installed with the command)" \
    "doctor says where the installed shim is"
  expect_in "$WORK/doc" "ok      native frames: file:line read by libdw " "doctor names what reads file:line"
  finish
fi
# doctor says where the shim it checks came from, and what reads file:line
CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/doc" 2>&1
expect_in "$WORK/doc" "ok      libcapguard.so: $(readlink -f "$REAL_SHIM") loads (in the build tree)" "doctor: build tree's shim"
expect_in "$WORK/doc" "ok      native frames: file:line read by libdw " "doctor names what reads file:line"
CAPGUARD_SHIM=$REAL_SHIM CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/doc-env" 2>&1
expect_in "$WORK/doc-env" "ok      libcapguard.so: $(readlink -f "$REAL_SHIM") loads (from CAPGUARD_SHIM)" "doctor: shim from CAPGUARD_SHIM"
for layout in "tools:shim" "bin:lib" "bin:lib64" "bin:lib/x86_64-linux-gnu"; do
  exe_dir=${layout%%:*} lib_dir=${layout#*:}
  root=$WORK/${layout//[:\/]/_}
  mkdir -p "$root/$exe_dir" "$root/$lib_dir"
  cp "$CAPGUARD" "$root/$exe_dir/capguard"
  cp "$FAKE_SHIM" "$root/$lib_dir/libcapguard.so"
  # through a symlink too: the lookup follows /proc/self/exe, not argv[0]
  ln -s "$root/$exe_dir/capguard" "$WORK/cg-link"
  "$WORK/cg-link" run -q -- sh -c 'echo "$LD_PRELOAD"' >"$WORK/out" 2>"$WORK/err"; rc=$?
  expect_rc 0 "run with the shim in $layout"
  expect_in "$WORK/out" "$root/$lib_dir/libcapguard.so" "shim found in $layout"
  rm -f "$WORK/cg-link"
done
# no shim anywhere near: one line naming where it looked and what to do
mkdir -p "$WORK/bare/bin"; cp "$CAPGUARD" "$WORK/bare/bin/capguard"
if [ -e "$CAPGUARD_INSTALLED_SHIM" ]; then
  echo "note: $CAPGUARD_INSTALLED_SHIM exists, the not-found case is not checked here"
else
  "$WORK/bare/bin/capguard" run -- true >"$WORK/o" 2>"$WORK/e"; rc=$?
  expect_rc 125 "no shim anywhere"
  expect_in "$WORK/e" "libcapguard.so not found (looked in $WORK/bare/bin/../shim, $WORK/bare/bin/../lib*, " "where it looked"
  expect_in "$WORK/e" "set CAPGUARD_SHIM=/path/to/libcapguard.so" "what to do"
  expect_lines "$WORK/e" 1 "one line"
fi
finish
