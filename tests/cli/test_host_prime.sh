#!/usr/bin/env bash
# The priming file under a running host.
# - Rewritten in place while a host on driver 12.2 has it preloaded
#   (': > file', 'cp new file', 'truncate'): the host's next load during
#   capture must not touch pages that have gone (before: SIGBUS, exit 135,
#   in memcmp <- cg_prime_find_hashed <- cg_priming_take). The shim keeps its
#   own copy of what it needs; doctor says to replace the file by rename.
. "$(dirname "$0")/lib.sh"
use_real_shim
export CAPGUARD_MODE=guard
M=$WORK/master.cgp
# the master: both images, learned where the driver refuses loads in capture
FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_PRIME="$M" LD_PRELOAD="$REAL_SHIM" "$HOST_PRIME" 2 >/dev/null 2>&1
"$CAPGUARD" prime verify "$M" >"$WORK/verify.out" 2>&1
expect_in "$WORK/verify.out" "2 records intact (2 images" "the master holds both images"
# a smaller priming file (one image), to copy over the other in place
FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_PRIME="$WORK/small.cgp" LD_PRELOAD="$REAL_SHIM" "$HOST_PRIME" 1 >/dev/null 2>&1

P=$WORK/p.cgp
for rewrite in ": > $P" "cp $WORK/small.cgp $P" "truncate -s 100 $P"; do
  cp "$M" "$P"
  FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_PRIME="$P" CAPGUARD_QUIET=1 LD_PRELOAD="$REAL_SHIM" \
    "$HOST_PRIME" 4 --then "$rewrite" >"$WORK/out" 2>&1
  rc=$?
  expect_rc 0 "'$rewrite' while the host runs"
  expect_in "$WORK/out" "host: 4 captures, 2 loads answered 0" "'$rewrite': the images preloaded before were served"
done
"$CAPGUARD" doctor --prime "$M" >"$WORK/doctor.out" 2>&1
expect_in "$WORK/doctor.out" "replace it by rename" "doctor says to replace the file by rename"
finish
