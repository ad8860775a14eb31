#!/usr/bin/env bash
# The priming file under a running host.
# - Rewritten in place while a host on driver 12.2 has it preloaded
#   (': > file', 'cp new file', 'truncate'): the host's next load during
#   capture must not touch pages that have gone (before: SIGBUS, exit 135,
#   in memcmp <- cg_prime_find_hashed <- cg_priming_take). The shim keeps its
#   own copy of what it needs; doctor says to replace the file by rename.
# - Loads during capture are recorded once per process and image, and off
#   the capture's path: 200 captures loading 2 images on 13.0 (loads
#   allowed) wrote 200 records, each during its capture (100 hits an image);
#   now one an image, none while a capture that goes on is open (a load
#   refused on 12.2 has broken its capture: its one record is written then).
# - A relative CAPGUARD_PRIME is resolved at start, as the log is: a host
#   that chdir()s before its CUDA work still reads and records the file in
#   the directory it started in.
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

# --- once per process and image, off the capture's path
H=$WORK/hits.cgp
# the hits of k_prime_a and k_prime_b as the file counts them (the column
# headed "hits", found by its name: prime list has a copies column before it)
hits() {
  "$CAPGUARD" prime list "$1" 2>&1 | awk 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "hits") h = i}
    h && ($NF == "k_prime_a" || $NF == "k_prime_b") {print $NF "=" $h}' | sort | tr '\n' ' '
}
FAKECUDA_DRIVER_VERSION=13000 CAPGUARD_PRIME="$H" CAPGUARD_QUIET=1 LD_PRELOAD="$REAL_SHIM" \
  "$HOST_PRIME" 200 --watch "$H" >"$WORK/out" 2>&1; rc=$?
expect_rc 0 "13.0, 200 captures of 2 new images"
expect_in "$WORK/out" "host: 200 captures, 200 loads answered 0, $H changed during 0 captures" \
  "13.0, new images: nothing written while a capture was open"
n=$(hits "$H"); [ "$n" = "k_prime_a=1 k_prime_b=1 " ] && pass || fail "13.0, new images: hits $n, wanted 1 each"
FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_PRIME="$WORK/refused.cgp" CAPGUARD_QUIET=1 LD_PRELOAD="$REAL_SHIM" \
  "$HOST_PRIME" 50 --watch "$WORK/refused.cgp" >"$WORK/out" 2>&1; rc=$?
expect_rc 0 "12.2, 50 captures loading 2 images"
# A load 12.2 refuses has broken its capture already: its record is written
# there and then (a host killed before the end keeps it: cli-died), once per
# process and image, so the file changes during the first capture of each
# image only, and never during a capture that goes on (13.0 below).
expect_in "$WORK/out" "changed during 2 captures" "12.2: written only during the 2 captures its first refusals broke"
n=$(hits "$WORK/refused.cgp"); [ "$n" = "k_prime_a=1 k_prime_b=1 " ] && pass || fail "12.2: hits $n, wanted 1 each"
# a process loading known images (CAPGUARD_PRIME_READONLY off, nothing
# preloaded: report mode records nothing, so guard mode with an emptied pool)
cp "$WORK/refused.cgp" "$WORK/known.cgp"
FAKECUDA_DRIVER_VERSION=13000 CAPGUARD_PRIME="$WORK/known.cgp" CAPGUARD_QUIET=1 LD_PRELOAD="$REAL_SHIM" \
  "$HOST_PRIME" 200 --watch "$WORK/known.cgp" >"$WORK/out" 2>&1; rc=$?
expect_rc 0 "13.0, 200 captures of 2 known images"
expect_in "$WORK/out" "changed during 0 captures" "13.0, known images: nothing written while a capture was open"
n=$(hits "$WORK/known.cgp"); [ "$n" = "k_prime_a=2 k_prime_b=2 " ] && pass \
  || fail "13.0, known images: hits $n, wanted 2 each (one more for this process)"

# --- a relative CAPGUARD_PRIME, and a host that chdir()s
mkdir -p "$WORK/start" "$WORK/elsewhere"
( cd "$WORK/start" && FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_PRIME=rel.cgp CAPGUARD_LOG=rel.jsonl CAPGUARD_QUIET=1 \
    LD_PRELOAD="$REAL_SHIM" "$HOST_PRIME" 2 --chdir "$WORK/elsewhere" ) >"$WORK/out" 2>&1; rc=$?
expect_rc 0 "relative CAPGUARD_PRIME, chdir: the host"
[ -s "$WORK/start/rel.cgp" ] && pass || fail "relative CAPGUARD_PRIME: nothing recorded where the host started"
[ -e "$WORK/elsewhere/rel.cgp" ] && fail "relative CAPGUARD_PRIME: recorded where the host went" || pass
[ -s "$WORK/start/rel.jsonl" ] && pass || fail "relative CAPGUARD_LOG: no log where the host started"
( cd "$WORK/start" && FAKECUDA_DRIVER_VERSION=12020 CAPGUARD_PRIME=rel.cgp CAPGUARD_QUIET=1 \
    LD_PRELOAD="$REAL_SHIM" "$HOST_PRIME" 2 --chdir "$WORK/elsewhere" ) >"$WORK/out" 2>&1; rc=$?
expect_in "$WORK/out" "host: 2 captures, 2 loads answered 0" "relative CAPGUARD_PRIME, chdir: the next run is served from it"
finish
