#!/usr/bin/env bash
# The README's container recipe for an engine that is not root: a fleet file
# baked into the image is root's, mode 644, served read-only
# (CAPGUARD_PRIME_READONLY=1) to an engine running as uid 65534. Trusted as
# ssh and sudo trust a file (owner root or you, writable by no one else, nor
# its directories), it is served, and the capture on an emulated 12.2 driver
# holds at the first run. A file that is not trusted is refused with the
# reason and the exact chown or chmod, and the advice never says the file
# lacks what it holds.
. "$(dirname "$0")/lib.sh"
use_real_shim
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "SKIP: needs root and setpriv to run an engine as uid 65534"
  exit 77
fi
chmod 755 "$WORK"              # the engine, uid 65534, reaches what is under it
# the command under test (an installed one: the wheel's venv) must be reachable by uid 65534
if ! setpriv --reuid 65534 --regid 65534 --clear-groups -- "$CAPGUARD" --version >/dev/null 2>&1 ||
   ! setpriv --reuid 65534 --regid 65534 --clear-groups -- test -r "$REAL_SHIM"; then
  echo "SKIP: uid 65534 cannot run $CAPGUARD or read its shim (a private directory above them)"
  exit 77
fi
mkdir -m 755 "$WORK/image" "$WORK/logs"
chown 65534 "$WORK/logs"
FLEET=$WORK/image/fleet.cgp
# the image's build step, as root: learned where written
"$CAPGUARD" prime learn --prime "$FLEET" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >"$WORK/learn.out" 2>&1 ||
  { fail "prime learn as root"; cat "$WORK/learn.out" >&2; }
chmod 644 "$FLEET"
[ "$(stat -c %u:%a "$FLEET")" = 0:644 ] && pass || fail "the fleet file is not root's 644"
before=$(sha256sum <"$FLEET")

# nobody NAME ARGS...: capguard run as uid 65534, read-only, on an emulated 12.2 driver
nobody() {
  local name=$1; shift
  CAPGUARD_PRIME_READONLY=1 setpriv --reuid 65534 --regid 65534 --clear-groups -- \
    "$CAPGUARD" run -q --log "$WORK/logs/$name.log" --emulate-driver 12020 --prime "$FLEET" -- \
    "$DEMO_ENGINE" "$CUBIN" cg_test_fill >"$WORK/$name.out" 2>"$WORK/$name.err" </dev/null
  rc=$?
}

# --- trusted: root's, 644, in root's 755 directories
nobody served
expect_rc 0 "a non-root engine with the root-owned read-only file captures at the first run"
expect_in "$WORK/served.err" "priming worked" "served"
expect_not_in "$WORK/served.err" "owned by uid 0" "root's file is not refused"
[ "$(sha256sum <"$FLEET")" = "$before" ] && pass || fail "the read-only file was written"

# --- the same file without CAPGUARD_PRIME_READONLY: trusted, so served read-only all the same
setpriv --reuid 65534 --regid 65534 --clear-groups -- "$CAPGUARD" run -q --log "$WORK/logs/rw.log" \
  --emulate-driver 12020 --prime "$FLEET" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >"$WORK/rw.out" 2>"$WORK/rw.err" </dev/null
rc=$?
expect_rc 0 "without CAPGUARD_PRIME_READONLY too, the root-owned file is served"
expect_in "$WORK/rw.err" "priming file $FLEET is not writable by you (Permission denied): served read-only" "said once, before the start"
expect_in "$WORK/rw.err" "priming worked" "served"
[ "$(sha256sum <"$FLEET")" = "$before" ] && pass || fail "the file was written"

# --- another user's file: refused, with the chown that fixes it
chown 65533 "$FLEET"
nobody other
expect_rc 1 "unprimed, the capture breaks"
expect_in "$WORK/other.err" "owned by uid 65533, neither root nor you (uid 65534)" "the reason"
expect_in "$WORK/other.err" "run 'chown 65534 $FLEET' as root" "the exact fix"
expect_not_in "$WORK/other.err" "is not a priming file the shim can read" "not called unreadable"
expect_not_in "$WORK/other.err" "lacks" "the advice never says the file lacks what it holds"
expect_not_in "$WORK/other.err" "prime learn" "nor to learn it again"
expect_in "$WORK/other.err" "next: the priming file $FLEET was not used" "next: says it was refused"
chown 0 "$FLEET"

# --- root's, but not readable by the engine: the chmod that fixes it
chmod 600 "$FLEET"
nobody unreadable
expect_in "$WORK/unreadable.err" "cannot open it (Permission denied)): run 'chmod a+r $FLEET'" "an unreadable file"
chmod 644 "$FLEET"

# --- writable by others: the file, then its directory
chmod 664 "$FLEET"
nobody group-file
expect_in "$WORK/group-file.err" "writable by group or others (mode 664)" "a group-writable file"
expect_in "$WORK/group-file.err" "chmod go-w $FLEET" "its fix"
chmod 644 "$FLEET"
chmod 775 "$WORK/image"
nobody group-dir
expect_rc 1 "a file in a group-writable directory is not served"
expect_in "$WORK/group-dir.err" "its directory $WORK/image is writable by group or others (mode 775)" "the directory named"
expect_in "$WORK/group-dir.err" "run 'chmod go-w $WORK/image'" "its fix"
chmod 755 "$WORK/image"
chown 65533 "$WORK/image"
nobody other-dir
expect_in "$WORK/other-dir.err" "its directory $WORK/image is owned by uid 65533" "another user's directory"
chown 0 "$WORK/image"
# a sticky directory that all may write (as /tmp) is safe: nobody may rename another's file in it
chmod 1777 "$WORK/image"
nobody sticky
expect_rc 0 "a sticky world-writable directory is trusted"
chmod 755 "$WORK/image"

# --- root is refused another user's file too, with the chown to root
chown 65534 "$FLEET"
CAPGUARD_PRIME_READONLY=1 run_cg root run -q --emulate-driver 12020 --prime "$FLEET" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill
expect_in "$WORK/root.err" "owned by uid 65534, not by root" "root: the reason"
expect_in "$WORK/root.err" "run 'chown root $FLEET'" "root: the fix"
finish
