#!/usr/bin/env bash
# capguard doctor with the real shim over the fake driver (tests/fakecuda):
# the driver version and what it means for module loads, every route seen by the
# shim; with no libcuda, says so and exits 0 (documented: no problem by itself).
. "$(dirname "$0")/lib.sh"
use_real_shim
export CAPGUARD_PRIME=$WORK/prime.cgp
shim=$(readlink -f "$REAL_SHIM")

FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" doctor >"$WORK/old.out" 2>&1; rc=$?
expect_rc 0 "doctor on a 12.2 driver with the real shim"
expect_in "$WORK/old.out" "ok      libcuda: $FAKECUDA_DIR/libcuda.so.1" "the fake driver found via LD_LIBRARY_PATH"
expect_in "$WORK/old.out" "driver version: 12020 (CUDA 12.2)" "driver version"
expect_in "$WORK/old.out" "module loads during capture: REFUSED by this driver (older than 12.3)" "12.2 refuses module loads during capture"
expect_in "$WORK/old.out" "ok      libcapguard.so: $shim loads" "real shim loads"
expect_in "$WORK/old.out" "ok      route: exported symbol (dlsym RTLD_DEFAULT, -lcuda): seen by the shim" "exported route"
expect_in "$WORK/old.out" "ok      route: dlsym on the libcuda handle: seen by the shim" "handle route"
expect_in "$WORK/old.out" "ok      route: cuGetProcAddress_v2 bootstrap: seen by the shim" "cuGetProcAddress route"
expect_not_in "$WORK/old.out" "PROBLEM" "no problem"
expect_in "$WORK/old.out" "no problem found" "verdict line"

"$CAPGUARD" doctor >"$WORK/new.out" 2>&1; rc=$?
expect_rc 0 "doctor on a 13.0 driver"
expect_in "$WORK/new.out" "driver version: 13000 (CUDA 13.0)" "13.0 version"
expect_in "$WORK/new.out" "module loads during capture: allowed by this driver (12.3 or newer)" "13.0 allows loads"

# --- no libcuda: one line says so; the routes cannot be checked; exit 0 (no problem by itself)
CAPGUARD_LIBCUDA=libcuda-absent.so.1 "$CAPGUARD" doctor >"$WORK/none.out" 2>&1; rc=$?
expect_rc 0 "doctor without a driver"
expect_in "$WORK/none.out" "libcuda: none found (libcuda-absent.so.1: cannot open shared object file" "no libcuda"
expect_in "$WORK/none.out" "ok      libcapguard.so: $shim loads" "shim loads without a driver"
expect_in "$WORK/none.out" "note    route: cuGetProcAddress_v2 bootstrap: not checked: there is no libcuda" "routes not checked"
expect_in "$WORK/none.out" "no problem found" "no problem without a driver"
finish
