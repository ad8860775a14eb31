#!/usr/bin/env bash
# Ranks side by side: one `capguard run` starts two processes of a job, RANK 0
# and RANK 1 (WORLD_SIZE 2), writing one log, over the real shim and the fake
# driver emulating 12.2 (startup_like: ten captures, five loads during them).
# Rank 0 has a priming file learned on 13.0 and captures all ten; rank 1 has
# an empty one, and its first capture breaks at its first load (startup_like
# stops at a broken capture). The start records carry
# each rank; `capguard report` (text, JSON, HTML) and run's summary show the
# table of ranks x captures and the differences: which capture rank 1 broke,
# with its first offender, that rank 0 captured it, and the counts.
. "$(dirname "$0")/lib.sh"
use_real_shim
P=$WORK/learned.cgp
LOG=$WORK/ranks.jsonl

FAKECUDA_DRIVER_VERSION=13000 "$CAPGUARD" prime learn --prime "$P" -- "$STARTUP_LIKE" >"$WORK/learn.out" 2>&1; rc=$?
expect_rc 0 "learn on 13.0"

# one run, two ranks: each its own priming file, as two hosts would have
FAKECUDA_DRIVER_VERSION=12020 "$CAPGUARD" run --log "$LOG" -- /bin/sh -c '
  RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 CAPGUARD_PRIME="$1" "$3" >"$4/rank0.out" 2>&1 &
  RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 CAPGUARD_PRIME="$2" "$3" >"$4/rank1.out" 2>&1 &
  wait' sh "$P" "$WORK/empty.cgp" "$STARTUP_LIKE" "$WORK" >"$WORK/run.out" 2>"$WORK/run.err"; rc=$?
expect_in "$WORK/rank0.out" "captured 10 of 10 sizes" "rank 0 (primed) captured every size"
expect_not_in "$WORK/rank1.out" "captured 10 of 10 sizes" "rank 1 (not primed) broke a capture"

# the start records carry the launcher's rank
n=$(grep '"type":"start"' "$LOG" | grep -c '"rank":0,"local_rank":0,"world_size":2')
[ "$n" -ge 1 ] && pass || fail "no start record says rank 0 of 2"
n=$(grep '"type":"start"' "$LOG" | grep -c '"rank":1,"local_rank":1,"world_size":2')
[ "$n" -ge 1 ] && pass || fail "no start record says rank 1 of 2"
grep '"type":"start"' "$LOG" | grep -v '"rank":' | grep -q . && pass || fail "the run's shell (no rank) should have no rank key"

# the report's table: one row a rank, rank 0 broke nothing, rank 1 broke some
"$CAPGUARD" report "$LOG" >"$WORK/report.txt" 2>&1
expect_in "$WORK/report.txt" "Ranks (2 of a world of 2)" "the report's ranks heading"
row0=$(grep -E '^  0 +[0-9]+ +10 +10 +0 +-$' "$WORK/report.txt")
[ -n "$row0" ] && pass || fail "rank 0's row: 10 captures, 10 captured, 0 broken: $(grep -A3 '^Ranks' "$WORK/report.txt")"
row1=$(grep -E '^  1 +[0-9]+ +[0-9]+ +[0-9]+ +[1-9]' "$WORK/report.txt")
broken1=$(echo "$row1" | awk '{print $5}')
[ -n "$broken1" ] && [ "$broken1" -gt 0 ] && pass || fail "rank 1's row should count broken captures: $row1"
echo "$row1" | grep -q 'cuModuleLoad[A-Za-z]* of k_' && pass || fail "rank 1's first offender names the load and its kernel: $row1"
expect_in "$WORK/report.txt" "Differences between ranks" "the differences' heading"
grep -E '^  rank 1 broke capture [0-9]+ \(first offender cuModuleLoad[A-Za-z]* of k_[a-z0-9_,]* at .*\); rank 0 captured it$' \
  "$WORK/report.txt" >/dev/null && pass || fail "the capture rank 1 broke and rank 0 captured is said: $(grep 'rank 1 broke' "$WORK/report.txt" | head -2)"
captured1=$(echo "$row1" | awk '{print $4}')
expect_in "$WORK/report.txt" "rank 0 captured 10 graphs, rank 1 captured $captured1 graph" "the counts' difference"

# JSON: the same table and sentences
"$CAPGUARD" report --json "$LOG" >"$WORK/report.json" 2>&1
python3 - "$WORK/report.json" "$broken1" <<'PY' && pass || fail "the JSON report's ranks"
import json, sys
r = json.load(open(sys.argv[1]))["ranks"]
rows = {x["rank"]: x for x in r["ranks"]}
assert sorted(rows) == [0, 1], rows
assert rows[0]["broken"] == 0 and rows[0]["captured"] == 10 and rows[0]["first_offender"] is None, rows[0]
assert rows[1]["broken"] == int(sys.argv[2]) and rows[1]["first_offender"].startswith("cuModuleLoad"), rows[1]
assert rows[0]["world_size"] == 2 and rows[1]["first_broken_capture"] >= 1, rows
assert any(d.startswith("rank 1 broke capture") for d in r["differences"]), r["differences"]
PY

# HTML: the table and the differences
"$CAPGUARD" report --html "$WORK/report.html" "$LOG" >/dev/null 2>&1
expect_in "$WORK/report.html" "<h2>Ranks</h2>" "the HTML page's ranks"
expect_in "$WORK/report.html" "<li class=\"warn\">rank 1 broke capture" "the HTML page's differences"

# run's summary
expect_in "$WORK/run.err" "capguard: Ranks (2 of a world of 2)" "run's summary has the ranks' table"
expect_in "$WORK/run.err" "capguard:   rank 1 broke capture" "run's summary has the differences"

# a job of one rank, or none, has no table
FAKECUDA_DRIVER_VERSION=12020 RANK=0 WORLD_SIZE=1 "$CAPGUARD" run --prime "$P" --log "$WORK/one.jsonl" \
  -- "$STARTUP_LIKE" >"$WORK/one.out" 2>&1
"$CAPGUARD" report "$WORK/one.jsonl" >"$WORK/one.txt" 2>&1
expect_not_in "$WORK/one.txt" "Ranks" "one rank: no table"
# A stale RANK=0 under a launcher that names each rank itself (mpirun's
# OMPI_COMM_WORLD_RANK): the launcher's rank is taken, each rank its row.
E=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)
"$CAPGUARD" run --emulate-driver 12020 --log "$WORK/stale.jsonl" -- /bin/sh -c '
  RANK=0 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 "$@" >/dev/null 2>&1
  RANK=0 OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 "$@" >/dev/null 2>&1' sh "${E[@]}" >/dev/null 2>&1
"$CAPGUARD" report "$WORK/stale.jsonl" >"$WORK/stale.txt" 2>&1
expect_in "$WORK/stale.txt" "Ranks (2 of a world of 2)" "a stale RANK=0: mpirun's ranks are taken"
grep -qE '^  1 +[0-9]+ +1 +[01] +[01] ' "$WORK/stale.txt" && pass || fail "rank 1's row (mpirun's): $(cat "$WORK/stale.txt")"

# Two processes that both claim RANK=0, with no launcher's variable: each
# keeps its row, and the claim is said.
"$CAPGUARD" run --emulate-driver 12020 --log "$WORK/twice.jsonl" -- /bin/sh -c '
  RANK=0 WORLD_SIZE=2 "$@" >/dev/null 2>&1; RANK=0 WORLD_SIZE=2 "$@" >/dev/null 2>&1' sh "${E[@]}" >/dev/null 2>&1
"$CAPGUARD" report "$WORK/twice.jsonl" >"$WORK/twice.txt" 2>&1
[ "$(grep -cE '^  0 +[0-9]+ +1 +[01] +[01] ' "$WORK/twice.txt")" -eq 2 ] && pass \
  || fail "two processes claiming rank 0: wanted 2 rows: $(cat "$WORK/twice.txt")"
expect_in "$WORK/twice.txt" "rank 0 is claimed by 2 processes that captured (pids " "the double claim is said"

# Junk in a rank variable is said once (the run's shell says it; the
# processes it starts inherit the mark), never kept as a rank.
for v in abc -1 9223372036854775808; do
  RANK=$v "$CAPGUARD" run --emulate-driver 12020 --log "$WORK/junk.jsonl" -- /bin/sh -c '"$@"; "$@"' sh "${E[@]}" \
    >/dev/null 2>"$WORK/junk.err"
  [ "$(grep -c "RANK='$v' is not a rank (a whole number from 0); this process's rank is unknown" "$WORK/junk.err")" -eq 1 ] \
    && pass || fail "RANK=$v: wanted one warning: $(cat "$WORK/junk.err")"
done
RANK=5 WORLD_SIZE=2 "$CAPGUARD" run --log "$WORK/big.jsonl" -- "${E[@]}" >/dev/null 2>"$WORK/big.err"
expect_in "$WORK/big.err" "RANK='5' is not a rank of a world of 2; this process's rank is unknown" "RANK >= WORLD_SIZE said"
grep '"type":"start"' "$WORK/big.jsonl" | grep -q '"rank":' && fail "RANK=5 of 2 kept as a rank" || pass

# Ranks that began 2 and 1 captures, every one broken, did not capture alike.
cap() { # cap PID ID: a failed capture record
  printf '{"v":1,"type":"capture","pid":%s,"time_ns":1000,"id":%s,"stream":"0x1","mode":"global","tid":%s,"status":"failed","begin_ns":900,"end_ns":1000,"events":0,"began":"x","end_result":901}\n' "$1" "$2" "$1"
}
{
  for p in 101 102; do
    printf '{"v":1,"type":"start","pid":%s,"ppid":1,"time_ns":1,"mode":"guard","version":"0.1.0","run":"r1","rank":%s,"local_rank":%s,"world_size":2,"argv":["x"]}\n' $p $((p - 101)) $((p - 101))
  done
  cap 101 1; cap 101 2; cap 102 1
} >"$WORK/broke.jsonl"
"$CAPGUARD" report "$WORK/broke.jsonl" >"$WORK/broke.txt" 2>&1
expect_in "$WORK/broke.txt" "Ranks (2 of a world of 2)" "the broken ranks' table"
expect_not_in "$WORK/broke.txt" "captured alike" "ranks whose captures all broke are not alike"
expect_in "$WORK/broke.txt" "rank 0 began 2 captures, rank 1 began 1 capture" "the began counts differ"
finish
