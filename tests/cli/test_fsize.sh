#!/usr/bin/env bash
# Attack 6 of docs/reliability.md: under a file-size limit (ulimit -f 8, SIGXFSZ at its
# default action, which kills), capguard's own writes (priming records, log
# lines) never raise SIGXFSZ in the host and never change its disposition:
# attack_files loads 10 images of 1.5 KB in a capture (each recorded, each
# logged), then checks SIGXFSZ is as it was and writes 64 KiB itself, which
# must still kill it with SIGXFSZ (exit 153): the host's own limit still
# holds. Each loss is said once; the log ends on a whole line, the priming
# file holds no damaged record.
. "$(dirname "$0")/lib.sh"
use_real_shim
export FAKECUDA_DRIVER_VERSION=13000

# every line of a log is a whole JSON object, and the file ends with a newline
whole_lines() {
  python3 - "$1" <<'PY' && pass || fail "$2: the log holds a torn line"
import json, sys
data = open(sys.argv[1], "rb").read()
assert not data or data.endswith(b"\n"), "no final newline"
for line in data.splitlines():
    json.loads(line)
PY
}

for mode in guard report; do
  rm -f "$WORK/big"
  # stdout and stderr through a pipe: the limit is on files, not on pipes
  ( ulimit -f 8; exec env CAPGUARD_MODE=$mode CAPGUARD_PRIME="$WORK/$mode.cgp" CAPGUARD_LOG="$WORK/$mode.jsonl" \
      CAPGUARD_QUIET=1 LD_PRELOAD="$REAL_SHIM" "$ATTACK_FILES" fill 10 "$WORK/big" ) 2>&1 | cat >"$WORK/$mode.out"
  rc=${PIPESTATUS[0]}
  expect_in "$WORK/$mode.out" "host: SIGXFSZ as it was" "$mode: the host lived through capguard's writes, its SIGXFSZ untouched"
  expect_rc 153 "$mode: the host's own write past the limit still gets SIGXFSZ"
  [ "$(grep -c "cannot write to the log $WORK/$mode.jsonl (File too large)" "$WORK/$mode.out")" -eq 1 ] \
    && pass || fail "$mode: the log's loss said once"
  [ "$(stat -c %s "$WORK/$mode.jsonl")" -le 8192 ] && pass || fail "$mode: the log grew past the limit"
  whole_lines "$WORK/$mode.jsonl" "$mode"
done
[ "$(grep -c "priming file $WORK/guard.cgp: write failed (File too large); nothing recorded" "$WORK/guard.out")" -eq 1 ] \
  && pass || fail "guard: the priming file's loss said once"
"$CAPGUARD" prime verify "$WORK/guard.cgp" >"$WORK/verify.out" 2>&1; rc=$?
expect_rc 0 "prime verify after the limit"
expect_in "$WORK/verify.out" ", 0 damaged" "no damaged priming record"
[ -e "$WORK/report.cgp" ] && fail "report mode wrote a priming file" || pass

# --- a full disk (a 64 KiB tmpfs with one page left, where mounting is
# allowed): the line that does not fit whole is taken back
mkdir -p "$WORK/small"
if mount -t tmpfs -o size=64k tmpfs "$WORK/small" 2>/dev/null; then
  head -c 60000 /dev/zero >"$WORK/small/filler"
  CAPGUARD_QUIET=1 CAPGUARD_LOG="$WORK/small/full.jsonl" CAPGUARD_PRIME="$WORK/full.cgp" LD_PRELOAD="$REAL_SHIM" \
    "$ATTACK_FILES" fill 10 "$WORK/big" >"$WORK/full.out" 2>&1; rc=$?
  cp "$WORK/small/full.jsonl" "$WORK/full.jsonl"
  umount "$WORK/small"
  expect_rc 0 "full disk: the host runs as without capguard"
  expect_in "$WORK/full.out" "cannot write to the log $WORK/small/full.jsonl (No space left on device)" "full disk: said"
  [ -s "$WORK/full.jsonl" ] && pass || fail "full disk: nothing was written before the disk filled"
  whole_lines "$WORK/full.jsonl" "full disk"
else
  echo "note: tmpfs mount not allowed here; the full-disk case was not run (the file-size limit cuts a write the same way)"
fi
finish
