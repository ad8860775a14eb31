#!/usr/bin/env bash
# capguard doctor: driver (none, old, new, no GPU), shim and its routes (via
# capguard-selftest), priming file and log health; exit 1 on a problem.
. "$(dirname "$0")/lib.sh"
unset CAPGUARD_LOG CAPGUARD_LIBCUDA
export CAPGUARD_SHIM=$FAKE_SHIM CAPGUARD_PRIME=$WORK/cache/prime.cgp
fake_cuda=$FAKE_DRIVER_DIR/libcuda.so.1

# --- no libcuda at all: says so and what it means; not a problem by itself
CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/none.out" 2>&1; rc=$?
expect_in "$WORK/none.out" "libcuda: none found (libcuda-absent.so.1: cannot open shared object file" "no libcuda"
expect_in "$WORK/none.out" "nothing here can capture CUDA graphs" "what no libcuda means"
expect_in "$WORK/none.out" "ok      libcapguard.so: $(readlink -f "$FAKE_SHIM") loads" "shim loads"
# with no driver only the exported symbol can be checked: the fake shim exports it
expect_in "$WORK/none.out" "ok      route: exported symbol (dlsym RTLD_DEFAULT, -lcuda): seen by the shim" "exported route"
expect_in "$WORK/none.out" "note    route: dlsym on the libcuda handle: not checked: there is no libcuda" "handle route without libcuda"
expect_in "$WORK/none.out" "priming file: $WORK/cache/prime.cgp: not created yet" "no priming file yet"
expect_in "$WORK/none.out" "note    log: CAPGUARD_LOG is not set" "no log configured"
expect_in "$WORK/none.out" "no problem found" "no problem without a driver"
expect_rc 0 "doctor without a driver"

# --- an old driver found through LD_LIBRARY_PATH, like any dlopen; no GPU
LD_LIBRARY_PATH=$FAKE_DRIVER_DIR CGTEST_DRIVER_VERSION=12020 "$CAPGUARD" doctor >"$WORK/old.out" 2>&1; rc=$?
expect_in "$WORK/old.out" "ok      libcuda: $fake_cuda" "libcuda path via dlinfo"
expect_in "$WORK/old.out" "driver version: 12020 (CUDA 12.2)" "driver version"
expect_in "$WORK/old.out" "module loads during capture: REFUSED by this driver (older than 12.3)" "old driver refuses loads"
expect_in "$WORK/old.out" "GPUs: none (cuInit: no CUDA-capable device)" "no GPU"
# the stand-in shim only defines the symbol: the other two routes escape it, and the doctor says so
expect_in "$WORK/old.out" "ok      route: exported symbol (dlsym RTLD_DEFAULT, -lcuda): seen by the shim" "exported route with driver"
expect_in "$WORK/old.out" "PROBLEM route: dlsym on the libcuda handle: NOT seen by the shim: resolves to $fake_cuda" "handle route escapes"
expect_in "$WORK/old.out" "PROBLEM route: cuGetProcAddress_v2 bootstrap: NOT seen by the shim: resolves to $fake_cuda" "getprocaddress route escapes"
expect_in "$WORK/old.out" "2 problems found" "problem count"
expect_rc 1 "doctor finding unrouted calls"

# --- a new driver with a GPU
LD_LIBRARY_PATH=$FAKE_DRIVER_DIR CGTEST_DRIVER_VERSION=12080 CGTEST_CUINIT=0 CGTEST_GPUS=2 \
  "$CAPGUARD" doctor >"$WORK/new.out" 2>&1
expect_in "$WORK/new.out" "driver version: 12080 (CUDA 12.8)" "new driver version"
expect_in "$WORK/new.out" "module loads during capture: allowed by this driver (12.3 or newer)" "new driver allows loads"
expect_in "$WORK/new.out" "ok      GPUs: 2" "GPU count"

# --- the self-test's own report of the routes, without any shim
LD_LIBRARY_PATH=$FAKE_DRIVER_DIR "$SELFTEST" >"$WORK/st.out" 2>&1; rc=$?
expect_rc 0 "self-test without the shim"
expect_in "$WORK/st.out" "shim absent -" "self-test: no shim"
expect_in "$WORK/st.out" "libcuda $fake_cuda" "self-test: libcuda"
for r in exported handle getprocaddress; do expect_in "$WORK/st.out" "route $r direct $fake_cuda" "self-test route $r direct"; done

# --- shim missing
CAPGUARD_SHIM=$WORK/nope.so CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/ns.out" 2>&1; rc=$?
expect_rc 1 "doctor without a shim"
expect_in "$WORK/ns.out" "PROBLEM libcapguard.so: CAPGUARD_SHIM=$WORK/nope.so is not a readable file" "shim missing"
# a file that is not a shared library
printf 'junk' >"$WORK/libcapguard.so"
CAPGUARD_SHIM=$WORK/libcapguard.so CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/junk.out" 2>&1; rc=$?
expect_rc 1 "doctor with a broken shim"
expect_in "$WORK/junk.out" "did not load into the self-test" "broken shim"

# --- priming file refused (a symlink), log not writable
ln -s /etc/hostname "$WORK/link.cgp"
CAPGUARD_PRIME=$WORK/link.cgp CAPGUARD_LOG=$WORK/notadir/x.jsonl CAPGUARD_LIBCUDA=libcuda-absent.so.1 \
  "$CAPGUARD" doctor >"$WORK/files.out" 2>&1; rc=$?
touch "$WORK/notadir"
CAPGUARD_PRIME=$WORK/notadir/p.cgp CAPGUARD_LOG=$WORK/notadir/x.jsonl CAPGUARD_LIBCUDA=libcuda-absent.so.1 \
  "$CAPGUARD" doctor >"$WORK/files2.out" 2>&1; rc2=$?
expect_in "$WORK/files.out" "PROBLEM priming file: $WORK/link.cgp is not a priming file the shim can read (is a symbolic link" "symlinked priming file refused"
expect_in "$WORK/files.out" "PROBLEM log: $WORK/notadir/x.jsonl cannot be created: its directory $WORK/notadir does not exist" "log directory missing"
[ "$rc" -eq 1 ] && pass || fail "doctor with bad files: exit $rc"
expect_in "$WORK/files2.out" "PROBLEM log: $WORK/notadir/x.jsonl cannot be created: a part of its directory is a file, not a directory" "log under a file"
expect_in "$WORK/files2.out" "PROBLEM priming file: $WORK/notadir/p.cgp" "priming file under a file"
[ "$rc2" -eq 1 ] && pass || fail "doctor with bad files: exit $rc2"
CAPGUARD_LOG=$WORK/ok.jsonl CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/okl.out" 2>&1
expect_in "$WORK/okl.out" "ok      log: $WORK/ok.jsonl is writable" "writable log"

# colour never with NO_COLOR, and not into a pipe
NO_COLOR= CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor 2>&1 | grep -q $'\033' && fail "colour into a pipe" || pass
if command -v script >/dev/null; then
  NO_COLOR=1 CAPGUARD_LIBCUDA=libcuda-absent.so.1 script -qec "$CAPGUARD doctor" /dev/null >"$WORK/tty1" 2>&1
  grep -q $'\033\[' "$WORK/tty1" && fail "colour despite NO_COLOR" || pass
  env -u NO_COLOR TERM=xterm CAPGUARD_LIBCUDA=libcuda-absent.so.1 script -qec "$CAPGUARD doctor" /dev/null >"$WORK/tty2" 2>&1
  grep -q $'\033\[32m' "$WORK/tty2" && pass || fail "no colour on a terminal"
fi
finish
