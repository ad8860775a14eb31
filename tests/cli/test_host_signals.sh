#!/usr/bin/env bash
# capguard's own writes never raise SIGPIPE in the host, and leave its
# SIGPIPE as it was: a C host whose stderr is a pipe whose reader has gone,
# which never writes to stderr itself, exits 0 whether capguard reports on
# stderr or, with CAPGUARD_QUIET=1, only says its summary there at exit
# (141, killed by SIGPIPE, before). A host that blocked SIGPIPE and has one
# pending keeps it pending.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=13000

# dead_stderr CMD...: CMD with stderr a pipe whose read end is closed, and
# SIGPIPE at its default action (as a C program started by a shell gets it);
# its status in $rc (128+N when a signal N killed it), its stdout in $WORK/out
dead_stderr() {
  python3 - "$@" >"$WORK/out" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stderr=w, restore_signals=True)
sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)
PY
  rc=$?
}

for quiet in 0 1; do
  for mode in report guard; do
    dead_stderr env CAPGUARD_QUIET=$quiet CAPGUARD_MODE=$mode LD_PRELOAD="$REAL_SHIM" "$HOST_SIGNALS" quiet
    expect_rc 0 "$mode, CAPGUARD_QUIET=$quiet: the host lives through capguard's writes to a dead stderr"
    expect_in "$WORK/out" "host: SIGPIPE as it was" "$mode, CAPGUARD_QUIET=$quiet: SIGPIPE untouched"
    dead_stderr env CAPGUARD_QUIET=$quiet CAPGUARD_MODE=$mode LD_PRELOAD="$REAL_SHIM" "$HOST_SIGNALS" pending
    expect_rc 0 "$mode, CAPGUARD_QUIET=$quiet: a host with SIGPIPE pending"
    expect_in "$WORK/out" "host: its SIGPIPE still pending" "$mode, CAPGUARD_QUIET=$quiet: the host's pending SIGPIPE kept"
  done
done
# the same host without capguard, as the anchor
dead_stderr "$HOST_SIGNALS" quiet
expect_rc 0 "without capguard"
finish
