#!/usr/bin/env bash
# Secure execution (AT_SECURE): with the shim in a set-user-ID program, the
# invoking user's environment chooses nothing. As glibc's secure_getenv
# rules, capguard takes no path, mode or value from it: CAPGUARD_LOG,
# CAPGUARD_PRIME (and HOME, XDG_CACHE_HOME), CAPGUARD_METRICS naming a
# root-only directory leave it untouched (before: the log appended to as
# root, the priming file's directories made as root), CAPGUARD_MODE,
# CAPGUARD_QUIET and CAPGUARD_HANG_S are ignored; it still watches and
# counts (the broken capture on stderr, the exit line), and says so once.
# The host (secure_host.c) links the shim, since ld.so ignores LD_PRELOAD
# paths in secure mode; a copy of it set-user-ID root is run by nobody
# (setpriv). The same host not set-user-ID, run by nobody, takes the same
# settings: the anchor. Over the fake driver as 12.2 (the load in the
# capture is refused, so guard mode would record it), with the real shim.
# Before: the log and the metrics file written as root in a directory only
# root may write.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: needs root, to make a program set-user-ID and run it as another user"
  exit 77
fi
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is not installed"; exit 77; }
uid=$(id -u nobody) gid=$(id -g nobody)
chmod 755 "$WORK" # mktemp's 0700: nobody must reach the programs
mkdir -m 755 "$WORK/bin"
cp "$SECURE_HOST" "$WORK/bin/suid_host" && chown root:root "$WORK/bin/suid_host" && chmod 4755 "$WORK/bin/suid_host"
cp "$SECURE_HOST" "$WORK/bin/plain_host" && chown "$uid:$gid" "$WORK/bin/plain_host"
mkdir -m 700 "$WORK/root-only" # root's alone
mkdir -m 755 "$WORK/users" && chown "$uid:$gid" "$WORK/users"

# host PROGRAM DIR: the program run by nobody with every setting pointing into DIR
host() {
  local prog=$1 dir=$2
  setpriv --reuid="$uid" --regid="$gid" --clear-groups -- env -i PATH=/usr/bin:/bin \
    HOME="$dir/home" XDG_CACHE_HOME="$dir/cache" CAPGUARD_LOG="$dir/log.jsonl" CAPGUARD_PRIME="$dir/prime/p.cgp" \
    CAPGUARD_METRICS="$dir" CAPGUARD_MODE=report CAPGUARD_QUIET=1 CAPGUARD_HANG_S=1 CAPGUARD_RUN='$(touch PWNED)' \
    RANK=3 FAKECUDA_DRIVER_VERSION=12020 "$prog" "$CUBIN" >"$WORK/out" 2>"$WORK/err"
  rc=$?
}

# --- set-user-ID root, run by nobody
host "$WORK/bin/suid_host" "$WORK/root-only"
expect_rc 0 "set-user-ID host"
expect_in "$WORK/out" "uid=$uid euid=0 at_secure=1" "the host runs in secure mode, as root"
expect_in "$WORK/out" "load=900 alloc=900" "the load and the allocation in the capture were refused (12.2)"
[ -z "$(ls -A "$WORK/root-only")" ] && pass || fail "files written in the root-only directory: $(ls -AR "$WORK/root-only")"
n=$(grep -c "^capguard: secure execution" "$WORK/err")
[ "$n" -eq 1 ] && pass || fail "secure execution said $n times, wanted once: $(cat "$WORK/err")"
expect_in "$WORK/err" "capguard: secure execution (set-user-ID, set-group-ID or file capabilities): capguard takes no setting from the environment and writes no file (no log, no priming file, no metrics); it watches in guard mode and counts, on stderr" "the line says what it does"
# it watched: the broken capture said (CAPGUARD_QUIET ignored) and counted at exit
expect_in "$WORK/err" "first offender cuModuleLoadData at suid_host" "the broken capture on stderr"
expect_in "$WORK/err" "capguard: 1 capture (1 broken), events: 1 module-load, 1 allocation (2 refused); no log (secure execution)" "the exit line counts it"
expect_not_in "$WORK/err" "waits in" "no hang watch"
expect_not_in "$WORK/err" "rank 3" "no rank from the environment"

# --- the anchor: the same host, not set-user-ID, takes every setting
host "$WORK/bin/plain_host" "$WORK/users"
expect_rc 0 "plain host"
expect_in "$WORK/out" "uid=$uid euid=$uid at_secure=0" "the plain host is not in secure mode"
grep -q '"type":"capture"' "$WORK/users/log.jsonl" 2>/dev/null && pass || fail "the plain host logged nothing: $(ls -A "$WORK/users")"
grep -q '"mode":"report"' "$WORK/users/log.jsonl" 2>/dev/null && pass || fail "the plain host did not take CAPGUARD_MODE"
ls "$WORK"/users/capguard_*.prom >/dev/null 2>&1 && pass || fail "the plain host wrote no metrics file: $(ls -A "$WORK/users")"
expect_not_in "$WORK/err" "secure execution" "the plain host is not told it is secure"
finish
