#!/usr/bin/env bash
# Metrics that recover and stay readable (docs/fleet.md, docs/reliability.md):
# a write that fails on a full disk is tried again and the file catches up,
# exit included; the file of a live process that /proc (hidepid=2) hides is
# never removed; the sweep of aged files is never the first capture end's
# and costs a write a slice, whatever the directory holds; the file is 0644
# under umask 077. The full disk is a small tmpfs and hidepid a mount of its
# own: both need root, and are skipped, said, without it.
. "$(dirname "$0")/lib.sh"
use_real_shim
engine=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)
ns=$(stat -L -c %i /proc/self/ns/pid)
root=0
if [ "$(id -u)" = 0 ] && mkdir -p "$WORK/full" && mount -t tmpfs -o size=256k tmpfs "$WORK/full" 2>/dev/null; then
  root=1
  trap 'umount "$WORK/full" 2>/dev/null; rm -rf "$WORK" "${hp:-}"' EXIT
else
  echo "SKIP (part): the full disk and hidepid cases need root and mount (uid $(id -u))"
fi

# A full disk for a second, in the middle of a process's captures: the
# failed write is said once, tried again a second on, and the file ends with
# the log's figures (it froze at the count before the disk filled).
if [ $root = 1 ]; then
  f=$WORK/full
  CAPGUARD_METRICS=$f CAPGUARD_LOG=$WORK/full.jsonl LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 \
    "$METRICS_PROBE" churn 4 >"$WORK/churn.out" 2>"$WORK/churn.err" &
  probe=$!
  sleep 1.3
  dd if=/dev/zero of="$f/fill" bs=4k >/dev/null 2>&1   # until the disk is full
  sleep 1.5
  rm -f "$f/fill"
  wait $probe
  rc=$?
  expect_rc 0 "churn over a disk full for a second"
  [ "$(grep -c "cannot write the metrics file in $f (write: No space left on device); trying again at the next write" "$WORK/churn.err")" -eq 1 ] \
    && pass || fail "wanted one warning for the full disk: $(cat "$WORK/churn.err")"
  expect_in "$WORK/churn.err" "capguard: the metrics file in $f is written again" "the recovery is said"
  want=$(grep '"type":"summary"' "$WORK/full.jsonl" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["captures"])')
  got=$(sed -n 's/^capguard_captures_total{.*} \([0-9]*\)$/\1/p' "$f"/capguard_*.prom)
  [ -n "$want" ] && [ "$got" = "$want" ] && pass || fail "after the disk was full: the file says $got captures, the log $want"
  ls -a "$f" | grep -q '\.tmp$' && fail "a temporary file was left: $(ls -a "$f")" || pass
fi

# /proc mounted hidepid=2 (in a mount namespace of its own): a process of
# nobody's cannot see root's, whose file stays; a dead process's aged file
# goes (the sweep did run).
# The engine, its shim and driver must be reachable by uid 65534 (not so
# under an installed wheel's private venv: said, and that case left out).
nobody_reaches() {
  local f
  for f in "$REAL_SHIM" "${engine[0]}"; do
    setpriv --reuid=65534 --regid=65534 --clear-groups -- test -r "$f" || return 1
  done
}
if [ $root = 1 ] && ! nobody_reaches; then
  echo "SKIP (part): uid 65534 cannot read the shim or the engine (a private directory above them): hidepid=2 case left out"
elif [ $root = 1 ]; then
  hp=$(mktemp -d /tmp/capguard-hidepid.XXXXXX)
  chmod 0777 "$hp"
  sleep 300 & live=$!
  sh -c 'exit 0' & dead=$!; wait $dead
  touch -d '20 minutes ago' "$hp/capguard_${ns}_${live}.prom" "$hp/capguard_${ns}_${dead}.prom"
  unshare -m --propagation private sh -c 'mount -t proc -o hidepid=2 proc /proc && exec "$@"' sh \
    setpriv --reuid=65534 --regid=65534 --clear-groups \
    env CAPGUARD_METRICS="$hp" XDG_CACHE_HOME="$hp/cache" HOME="$hp" LD_PRELOAD="$REAL_SHIM" CAPGUARD_SUMMARY=0 \
    "${engine[@]}" >"$WORK/hp.out" 2>&1
  rc=$?
  kill $live 2>/dev/null; wait $live 2>/dev/null
  expect_rc 0 "the engine as nobody under hidepid=2"
  [ -e "$hp/capguard_${ns}_${live}.prom" ] && pass || fail "hidepid=2: the file of a live process nobody cannot see was removed"
  [ ! -e "$hp/capguard_${ns}_${dead}.prom" ] && pass || fail "hidepid=2: the sweep did not run (a dead process's aged file stayed)"
fi

# 20,000 aged files of gone processes: the first capture end sweeps none of
# them and stays fast; later writes each sweep a slice.
c=$WORK/many
mkdir -p "$c"
python3 - "$c" "$ns" <<'PY'
import os, sys, time
d, ns = sys.argv[1], sys.argv[2]
old = time.time() - 3600
for i in range(20000):
    p = f"{d}/capguard_{ns}_{2000000000 + i}.prom"   # no such pid: above any pid_max
    open(p, "w").close()
    os.utime(p, (old, old))
PY
CAPGUARD_METRICS=$c LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "$METRICS_PROBE" firstend "$c" >"$WORK/first.out" 2>&1
read -r us files < <(sed -n 's/^first end: \([0-9]*\) us, \([0-9]*\) files$/\1 \2/p' "$WORK/first.out")
[ "${files:-0}" -eq 20001 ] && pass || fail "the first capture end swept: $(cat "$WORK/first.out")"
[ "${us:-999999}" -lt 100000 ] && pass || fail "the first capture end took ${us:-?} us with 20,000 files"
left=$(ls "$c" | wc -l)
[ "$left" -lt 20001 ] && [ "$left" -ge $((20001 - 256)) ] && pass \
  || fail "the exit write sweeps one slice (256 entries): $left files left"
CAPGUARD_METRICS=$c LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "$METRICS_PROBE" churn 3.5 >/dev/null 2>&1
left2=$(ls "$c" | wc -l)
[ "$left2" -le $((left - 600)) ] && pass || fail "a process's writes after its first each sweep a slice: $left then $left2 files"

# umask 077: the file is 0644 all the same (node_exporter, often nobody, reads it)
u=$WORK/umask
mkdir -p "$u"
(umask 077; CAPGUARD_METRICS=$u LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "${engine[@]}" >/dev/null 2>&1)
mode=$(stat -c %a "$u"/capguard_*.prom)
[ "$mode" = 644 ] && pass || fail "under umask 077 the metrics file is $mode, wanted 644"
finish
