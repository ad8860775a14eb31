#!/usr/bin/env bash
# Paths the shim could not use are refused by capguard run before the
# command starts (exit 2, one line), and said by capguard doctor: a log in
# /proc, a priming file on a read-only filesystem or under a read-only HOME,
# --prime in a directory that does not exist (never created). The
# read-only mounts are made in a private mount namespace (unshare -m).
. "$(dirname "$0")/lib.sh"
use_real_shim
ran=$WORK/ran
refused() { # refused NAME WANT-IN-STDERR ARGS...: run refuses, the command never starts
  local name=$1 want=$2; shift 2
  rm -f "$ran"
  run_cg "$name" "$@" -- sh -c "touch '$ran'"
  expect_rc 2 "$name: refused"
  [ -e "$ran" ] && fail "$name: the command ran" || pass
  expect_lines "$WORK/$name.err" 1 "$name: one line"
  expect_in "$WORK/$name.err" "$want" "$name: says why"
}
refused proc "capguard run: the log /proc/x.jsonl cannot be created in /proc" run --log /proc/x.jsonl
refused nodir "capguard run: priming file /nonexistent-capguard/dir/p.cgp cannot be created: its directory /nonexistent-capguard/dir does not exist (capguard creates none for --prime): create it (mkdir -p /nonexistent-capguard/dir) or pass another --prime" \
  run --prime /nonexistent-capguard/dir/p.cgp
[ -e /nonexistent-capguard ] && fail "--prime created directories" || pass
CAPGUARD_LOG=/proc/x.jsonl run_cg proc-doctor doctor
expect_in "$WORK/proc-doctor.out" "PROBLEM log: /proc/x.jsonl cannot be created in /proc" "doctor: the log in /proc"
run_cg nodir-doctor doctor --prime /nonexistent-capguard/dir/p.cgp
expect_in "$WORK/nodir-doctor.out" "PROBLEM priming file: /nonexistent-capguard/dir/p.cgp cannot be created: its directory" "doctor: --prime's directory"

# --- read-only filesystems (root in a private mount namespace)
if unshare -m true 2>/dev/null; then
  mkdir -p "$WORK/ro" "$WORK/rohome"
  unshare -m bash -c '
    mount -t tmpfs -o ro tmpfs "$1/ro" || exit 9
    mount -t tmpfs tmpfs "$1/rohome" && mkdir "$1/rohome/h" && mount -o remount,ro "$1/rohome" || exit 9
    "$2" run --prime "$1/ro/p.cgp" -- sh -c "touch $1/ran.ro" >"$1/ro.out" 2>"$1/ro.err"; echo $? >"$1/ro.rc"
    env HOME="$1/rohome/h" XDG_CACHE_HOME= "$2" run -- sh -c "touch $1/ran.home" >"$1/home.out" 2>"$1/home.err"; echo $? >"$1/home.rc"
    env HOME="$1/rohome/h" XDG_CACHE_HOME= "$2" doctor >"$1/home-doctor.out" 2>&1
    "$2" doctor --prime "$1/ro/p.cgp" >"$1/ro-doctor.out" 2>&1
  ' sh "$WORK" "$CAPGUARD"
  [ "$(cat "$WORK/ro.rc" 2>/dev/null)" = 2 ] && pass || fail "read-only filesystem: run exit $(cat "$WORK/ro.rc" 2>/dev/null), wanted 2"
  [ -e "$WORK/ran.ro" ] && fail "read-only filesystem: the command ran" || pass
  expect_in "$WORK/ro.err" "capguard run: priming file $WORK/ro/p.cgp cannot be created in $WORK/ro (Read-only file system)" "read-only filesystem said"
  [ "$(cat "$WORK/home.rc" 2>/dev/null)" = 2 ] && pass || fail "read-only HOME: run exit $(cat "$WORK/home.rc" 2>/dev/null), wanted 2"
  [ -e "$WORK/ran.home" ] && fail "read-only HOME: the command ran" || pass
  expect_in "$WORK/home.err" "cannot be created in $WORK/rohome/h (Read-only file system)" "read-only HOME said"
  expect_in "$WORK/home-doctor.out" "PROBLEM priming file: $WORK/rohome/h/.cache/capguard/prime.cgp cannot be created in $WORK/rohome/h (Read-only file system)" "doctor: read-only HOME"
  expect_in "$WORK/ro-doctor.out" "PROBLEM priming file: $WORK/ro/p.cgp cannot be created in $WORK/ro (Read-only file system)" "doctor: read-only filesystem"
else
  fail "unshare -m is not available: the read-only filesystem checks cannot run (run as root)"
fi
finish
