#!/usr/bin/env bash
# The small things an operator met: temporary logs do not pile up (the 10
# newest stay); report reads a log redirected or piped in; under -q the
# warning of a log that cannot be written does not promise reports on stderr;
# report --all does not measure a first replay from one run's begin to
# another's; docs/fleet.md names Debian's prometheus-node-exporter.
. "$(dirname "$0")/lib.sh"
use_real_shim
export TMPDIR=$WORK/tmp
mkdir -p "$TMPDIR"
# --- temporary logs: 15 kept from earlier runs, two hours old, and a log of the user's own
for i in $(seq 10 24); do
  touch -d "-2 hours -$i minutes" "$TMPDIR/capguard-old0$i.jsonl"
done
touch -d "-3 hours" "$TMPDIR/capguard-mine.jsonl" "$TMPDIR/capguard-prod01.json"
ln -s /etc/passwd "$TMPDIR/capguard-link00.jsonl"
"$CAPGUARD" run -q -- true >/dev/null 2>&1
n=$(ls "$TMPDIR" | grep -c '^capguard-old0[0-9]*\.jsonl$')
[ "$n" -eq 10 ] && pass || fail "temporary logs kept: $n, wanted the 10 newest: $(ls "$TMPDIR")"
[ -e "$TMPDIR/capguard-old010.jsonl" ] && [ ! -e "$TMPDIR/capguard-old024.jsonl" ] && pass \
  || fail "the newest stay, the oldest go: $(ls "$TMPDIR")"
[ -e "$TMPDIR/capguard-mine.jsonl" ] && [ -e "$TMPDIR/capguard-prod01.json" ] && [ -L "$TMPDIR/capguard-link00.jsonl" ] \
  && pass || fail "a file capguard did not name, or a link, was removed: $(ls "$TMPDIR")"

# --- two runs into one log (driver 13.0: each captures and replays its graph)
"$CAPGUARD" run -q --log "$WORK/two.jsonl" --prime "$WORK/p.cgp" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>&1
"$CAPGUARD" run -q --log "$WORK/two.jsonl" --prime "$WORK/p.cgp" -- "$DEMO_ENGINE" "$CUBIN" cg_test_fill >/dev/null 2>&1
run_cg all report --all "$WORK/two.jsonl"
grep -A1 '^Capture time' "$WORK/all.out" | tail -1 >"$WORK/all-line"
expect_not_in "$WORK/all-line" "first replay" "report --all: no first replay across two runs"
expect_in "$WORK/all.out" "first replay" "each process's own first replay stays"
run_cg one report "$WORK/two.jsonl"
grep -A1 '^Capture time' "$WORK/one.out" | tail -1 >"$WORK/one-line"
expect_in "$WORK/one-line" "first replay" "one run: its first replay after its first begin"

# --- report < log, and a pipe
"$CAPGUARD" report <"$WORK/two.jsonl" >"$WORK/redir.out" 2>"$WORK/redir.err"
expect_in "$WORK/redir.out" "capguard report: 1 log" "report < LOG reads it"
expect_not_in "$WORK/redir.err" "no log given" "not 'no log given'"
cat "$WORK/two.jsonl" | "$CAPGUARD" report >"$WORK/pipe.out" 2>&1
expect_in "$WORK/pipe.out" "capguard report: 1 log" "a pipe too"

# --- -q and a log that cannot be written (a file-size limit cuts it)
( ulimit -f 8; exec env CAPGUARD_PRIME="$WORK/q.cgp" CAPGUARD_LOG="$WORK/q.jsonl" CAPGUARD_QUIET=1 \
    LD_PRELOAD="$REAL_SHIM" "$ATTACK_FILES" fill 10 "$WORK/big" ) 2>&1 | cat >"$WORK/q.out"
expect_in "$WORK/q.out" "cannot write to the log $WORK/q.jsonl (File too large)" "the loss said"
expect_not_in "$WORK/q.out" "reports continue on stderr" "-q: no promise of reports on stderr"
expect_in "$WORK/q.out" "reports are quiet (CAPGUARD_QUIET=1), so what follows is said nowhere" "-q: what it means"

expect_in "$SOURCE_ROOT/docs/fleet.md" "prometheus-node-exporter" "fleet.md: Debian's binary"
finish
