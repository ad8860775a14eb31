#!/usr/bin/env bash
# `capguard prime` end to end: every subcommand, exit statuses (0 ok, 1 finding,
# 2 usage) and the one-line error format. Files are built through the real
# writer by prime_fixture.
#   test_prime_cli.sh CAPGUARD PRIME_FIXTURE  (CAPGUARD_UNDER_TEST, when set,
#   names the command instead: tests/cli/lib.sh)
set -u
CG=$(realpath "${CAPGUARD_UNDER_TEST:-$1}")
FIX=$(realpath "$2")
T=$(mktemp -d /tmp/cgcli.XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
unset CAPGUARD_PRIME XDG_CACHE_HOME
export HOME=$T/home
failures=0
checks=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# run RC ARGS...: runs capguard, stdout in $T/out, stderr in $T/err, checks the status.
run() {
  local want=$1; shift
  checks=$((checks + 1))
  "$CG" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "capguard $* -> exit $rc, want $want; stderr: $(cat "$T/err")"
  # Errors and warnings are whole lines of a known shape.
  if [ -s "$T/err" ] && grep -qvE '^(capguard prime: .+; .+|capguard: priming file .+: .+)$' "$T/err"; then
    fail "capguard $*: stderr line of unexpected shape: $(cat "$T/err")"
  fi
}
out_has() { grep -qE -- "$1" "$T/out" || fail "stdout lacks /$1/: $(cat "$T/out")"; }
err_has() { grep -qE -- "$1" "$T/err" || fail "stderr lacks /$1/: $(cat "$T/err")"; }
lines() { [ "$(wc -l <"$T/out")" -eq "$1" ] || fail "want $1 lines, got: $(cat "$T/out")"; }
# records N: list printed its header row and N records
records() {
  head -1 "$T/out" | grep -qE '^hash +kind +arch +bytes +copies +hits +last needed +kernels$' || fail "no header row: $(head -1 "$T/out")"
  [ "$(($(wc -l <"$T/out") - 1))" -eq "$1" ] || fail "want $1 records, got: $(cat "$T/out")"
}
fix() { "$FIX" "$@" >>"$T/hashes" || fail "prime_fixture $*"; }
hash_of() { "$FIX" "$T/scratch.cgp" "$1" "$2" && rm -f "$T/scratch.cgp"; }

# ---- help and dispatch ----
run 0 prime --help; out_has '^usage: capguard prime'; out_has 'verify \[FILE\]'
run 0 prime list --help; out_has '^usage: capguard prime'
run 2 prime; err_has 'no command given'
run 2 prime frobnicate; err_has "unknown command 'frobnicate'"

# ---- list ----
P=$T/p.cgp
run 1 prime list "$P"; err_has "$P does not exist"   # no file yet: named, exit 1 as verify
fix "$P" 1 1000 3 10
fix "$P" 2 2000 1 1
fix "$P" 3 300 5 40
fix "$P" 1 1000 2 0                                # needed again: hits 3 + 2
H1=$(hash_of 1 1000); H2=$(hash_of 2 2000); H3=$(hash_of 3 300)
run 0 prime list "$P"; records 3
out_has "^${H1:0:12}  fatbin  sm_81 +1000 +1 +5  $(date -u +%Y-%m-%d)   kern_1_a,kern_1_b$"
out_has "^${H3:0:12}  cubin   sm_83 +300 +1 +5  $(date -u -d '40 days ago' +%Y-%m-%d)   kern_3_a,kern_3_b$"
run 2 prime list "$P" extra; err_has 'at most one FILE'
run 2 prime list -v; err_has "unknown option '-v'"

# ---- default path ----
mkdir -p "$T/xdg/capguard"; cp "$P" "$T/xdg/capguard/prime.cgp"
XDG_CACHE_HOME=$T/xdg run 0 prime list; records 3
mkdir -p "$HOME/.cache/capguard"; "$FIX" "$HOME/.cache/capguard/prime.cgp" 9 50 >/dev/null
run 0 prime list; records 1
CAPGUARD_PRIME=$P run 0 prime list; records 3
env -u HOME "$CG" prime list >/dev/null 2>"$T/err"; [ $? -eq 1 ] || fail "no HOME: want exit 1"
err_has 'cannot tell where the priming file is'

# ---- show ----
run 0 prime show "${H2:0:8}" "$P"
out_has "^hash: +$H2$"; out_has '^kind: +ptx$'; out_has '^arch: +sm_82$'
out_has '^size: +2000 bytes$'; out_has '^hits: +1$'; out_has '^kernels: +2$'; out_has '^  kern_2_b$'
out_has "^last needed: +$(date -u -d '1 day ago' +%Y-%m-%d)T"
run 0 prime show "$(echo "${H2:0:8}" | tr a-f A-F)" "$P"; out_has "^hash: +$H2$"
CAPGUARD_PRIME=$P run 0 prime show "$H3"; out_has '^hits: +5$'
run 1 prime show 0000000000000000 "$P"; err_has 'no image .* starting with'
run 2 prime show xyz "$P"; err_has "'xyz' is not a hash prefix"
run 2 prime show; err_has 'show takes HASH-PREFIX'
# Ambiguous: 20 images share 16 first hex digits, so some first digit repeats.
A=$T/many.cgp
for s in $(seq 100 119); do fix "$A" "$s" 64; done
dup=$("$CG" prime list "$A" | cut -c1 | sort | uniq -d | head -1)
run 1 prime show "$dup" "$A"; err_has 'several images .* give more digits'

# ---- verify ----
# records, not images: 3 images and the hit record of image 1 needed again; list shows the 3
run 0 prime verify "$P"; out_has '4 records intact \(3 images, 1 hit update\), 0 damaged'
cp "$P" "$T/bad.cgp"
# flip every bit of byte 100 (inside record 1): writing a fixed value would
# change nothing when the byte (a time stamp's, a hash's) already held it
old=$(od -An -tu1 -j100 -N1 "$T/bad.cgp" | tr -d ' ')
printf "\\$(printf '%03o' $((old ^ 255)))" | dd of="$T/bad.cgp" bs=1 seek=100 conv=notrunc status=none
[ "$(od -An -tu1 -j100 -N1 "$T/bad.cgp" | tr -d ' ')" -eq $((old ^ 255)) ] || fail "byte 100 not flipped"
run 1 prime verify "$T/bad.cgp"; out_has 'offset 32: damaged record'; out_has '3 records intact \([0-9]+ images?, [0-9]+ hit updates?\), 1 damaged'
err_has "run 'capguard prime prune"
run 1 prime list "$T/bad.cgp"; records 2; err_has 'record at offset 32 damaged'
cp "$P" "$T/torn.cgp"; truncate -s -7 "$T/torn.cgp"; cp "$T/torn.cgp" "$T/torn.keep"
run 1 prime verify "$T/torn.cgp"; out_has 'incomplete last record'
run 1 prime verify "$T/none.cgp"; err_has 'does not exist'
run 2 prime verify a b; err_has 'at most one FILE'
# Progress on a terminal for a large file, none when stderr is not one.
for s in $(seq 1 17); do "$FIX" "$T/big.cgp" "$s" 1048576 >/dev/null; done
script -qec "'$CG' prime verify '$T/big.cgp'" /dev/null >"$T/tty" 2>&1 </dev/null
grep -q 'capguard prime verify: [0-9]*%' "$T/tty" || fail "no progress on a terminal: $(head -c 300 "$T/tty")"
run 0 prime verify "$T/big.cgp"; [ -s "$T/err" ] && fail "progress written when stderr is not a terminal"

# ---- refusals: file left untouched, exit 1 ----
cp "$P" "$T/newer.cgp"; printf '\x03' | dd of="$T/newer.cgp" bs=1 seek=8 conv=notrunc status=none
cp "$T/newer.cgp" "$T/newer.orig"
run 1 prime list "$T/newer.cgp"; err_has 'newer capguard'
run 1 prime verify "$T/newer.cgp"
run 1 prime prune "$T/newer.cgp"
run 1 prime rm "${H1:0:6}" "$T/newer.cgp"
cmp -s "$T/newer.cgp" "$T/newer.orig" || fail "newer-version file was modified"
cp "$P" "$T/gw.cgp"; chmod 0660 "$T/gw.cgp"
run 1 prime list "$T/gw.cgp"; err_has 'writable by group or others'
ln -s "$P" "$T/link.cgp"
run 1 prime list "$T/link.cgp"; err_has 'symbolic link'

# ---- prune ----
cp "$P" "$T/pr.cgp"
run 0 prime prune --older-than 30 "$T/pr.cgp"; out_has 'kept 2 images .* dropped 1 image and 0 damaged records$'
run 0 prime list "$T/pr.cgp"; records 2; grep -q "^${H3:0:12}" "$T/out" && fail "old image not pruned"
# --dry-run: what prune would do, the file unchanged
cp "$T/pr.cgp" "$T/pr-before.cgp"
run 0 prime prune --dry-run --max-size=1500 "$T/pr.cgp"; out_has 'would keep 1 image .* drop 1 image and 0 damaged records \(--dry-run: the file is unchanged\)$'
cmp -s "$T/pr.cgp" "$T/pr-before.cgp" || fail "prune --dry-run changed the file"
# a size smaller than every image: refused before anything is dropped
run 1 prime prune --max-size 1K "$T/pr.cgp"; err_has 'is smaller than every image of .* it would drop all 2; nothing dropped'
cmp -s "$T/pr.cgp" "$T/pr-before.cgp" || fail "prune --max-size below every image changed the file"
run 0 prime prune --max-size=1500 "$T/pr.cgp"; out_has 'kept 1 image '
run 0 prime list "$T/pr.cgp"; records 1; out_has "^${H1:0:12}"   # the least recently needed went first
run 0 prime verify "$T/pr.cgp"; out_has '1 record intact'     # hit records folded, one record said in the singular
run 0 prime prune "$T/bad.cgp"; out_has 'dropped 0 images and 1 damaged record$'   # said, not "dropped 0"
run 0 prime verify "$T/bad.cgp"  # damage dropped
run 0 prime prune "$T/absent.cgp"; out_has 'nothing to prune'; [ -e "$T/absent.cgp" ] && fail "prune created a file"
run 2 prime prune --older-than; err_has '--older-than needs a value'
run 2 prime prune --older-than soon "$P"; err_has 'whole number of days'
run 2 prime prune --max-size 12X "$P"; err_has 'size such as'
run 2 prime prune --fast "$P"; err_has "unknown option '--fast'"
run 2 prime prune "$P" "$P"; err_has 'at most one FILE'

# ---- merge ----
fix "$T/in2.cgp" 1 1000 10 0                     # shares image 1 with p.cgp
fix "$T/in2.cgp" 4 500
run 0 prime merge "$T/merged/m.cgp" "$P" "$T/in2.cgp"; out_has ': 4 images'
# an image's hits: the largest any file holds (5 in P, 10 in in2), never a sum
run 0 prime show "${H1:0:10}" "$T/merged/m.cgp"; out_has '^hits: +10$'
[ "$(stat -c %a "$T/merged/m.cgp")" = 600 ] || fail "merged file mode $(stat -c %a "$T/merged/m.cgp")"
cp "$T/merged/m.cgp" "$T/m.once"
run 0 prime merge "$T/merged/m.cgp" "$T/in2.cgp"; out_has ': 4 images'  # into an existing OUT
# merging the same input again changes nothing: idempotent
run 0 prime show "${H1:0:10}" "$T/merged/m.cgp"; out_has '^hits: +10$'
run 0 prime list "$T/merged/m.cgp"; cp "$T/out" "$T/list.twice"
run 0 prime list "$T/m.once"; cmp -s "$T/out" "$T/list.twice" || fail "merging in2 again changed the list"
# a file merged into itself, or named twice, counts once: hits are not doubled
run 0 prime merge "$T/merged/m.cgp" "$T/merged/m.cgp"; err_has 'is OUT itself'
run 0 prime show "${H1:0:10}" "$T/merged/m.cgp"; out_has '^hits: +10$'
run 0 prime merge "$T/twice.cgp" "$T/in2.cgp" "$T/in2.cgp"; err_has 'named more than once'
run 0 prime show "${H1:0:10}" "$T/twice.cgp"; out_has '^hits: +10$'
cp "$T/merged/m.cgp" "$T/m.orig"
run 1 prime merge "$T/merged/m.cgp" "$T/missing.cgp"; err_has 'missing.cgp does not exist'
run 1 prime merge "$T/merged/m.cgp" "$T/newer.cgp"; err_has 'newer capguard'
cmp -s "$T/merged/m.cgp" "$T/m.orig" || fail "failed merge modified OUT"
run 1 prime merge "$T/dm.cgp" "$T/torn.keep"; out_has ': 3 images'; err_has 'incomplete record'
run 0 prime show "${H1:0:6}" "$T/dm.cgp"; out_has '^hits: +3$'    # the torn record was the hit
run 2 prime merge "$T/merged/m.cgp"; err_has 'at least one IN'
run 2 prime merge -x a b; err_has "unknown option '-x'"

# ---- rm ----
cp "$P" "$T/rm.cgp"
run 0 prime rm "${H2:0:7}" "$T/rm.cgp"; out_has "^removed ${H2:0:12}  ptx  2000 bytes$"
run 0 prime list "$T/rm.cgp"; records 2
run 0 prime rm "${H1:0:5}" "${H3:0:5}" "$T/rm.cgp"; lines 2
run 0 prime list "$T/rm.cgp"; records 0
cp "$P" "$T/rm.cgp"; cp "$P" "$T/rm.orig"
run 1 prime rm "${H1:0:6}" 0000000000000000 "$T/rm.cgp"; err_has "starting with '0000000000000000'"
cmp -s "$T/rm.cgp" "$T/rm.orig" || fail "rm with an unknown prefix changed the file"
CAPGUARD_PRIME=$T/rm.cgp run 0 prime rm "${H1:0:6}" "${H2:0:6}"   # all hex: both are prefixes
CAPGUARD_PRIME=$T/rm.cgp run 0 prime list; records 1
run 1 prime rm "$dup" "$A"; err_has 'several images'
run 1 prime rm abc "$T/absent.cgp"; err_has 'does not exist'
run 2 prime rm; err_has 'at least one HASH-PREFIX'
run 2 prime rm nothex "$T/rm.cgp"; err_has "'nothex' is not a hash prefix"

echo "$checks commands run, $failures failures"
[ "$failures" -eq 0 ]
