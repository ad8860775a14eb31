#!/usr/bin/env bash
# The fleet view over the fake driver (docs/fleet.md): capture time in the
# run's summary and the report; the metrics file (CAPGUARD_METRICS, run
# --metrics): its figures are the log's, it is never written on a capture's
# path, a reader racing the writer never sees part of one, the files of
# exited processes are removed by the documented rule, and a write that
# fails costs the host one warning. test_cli_metrics_exporter.sh hands the
# files to the real promtool and node_exporter.
. "$(dirname "$0")/lib.sh"
use_real_shim
m=$WORK/metrics
mkdir -p "$m"

# --metrics needs a directory it can write
run_cg badm run --metrics "$WORK/nowhere" -- true
expect_rc 2 "run --metrics with no such directory"
expect_in "$WORK/badm.err" "--metrics needs a directory this user can write, not '$WORK/nowhere'" "one clear line"

# Run 1 breaks (driver 12.2 refuses the load), run 2 is primed: each process
# leaves its file, whose figures are its log's summary's.
engine=("$DEMO_ENGINE" "$CUBIN" cg_test_fill)
run_cg r1 run --quiet --emulate-driver 12020 --metrics "$m" --log "$WORK/r.jsonl" --prime "$WORK/p.cgp" -- "${engine[@]}"
expect_rc 1 "run 1 broke"
run_cg r2 run --quiet --metrics "$m" --log "$WORK/r.jsonl" --prime "$WORK/p.cgp" -- "${engine[@]}"
expect_rc 0 "run 2 primed"
# the run's summary says the capture time in one line
expect_in "$WORK/r2.err" "capguard: capture: 1 graph in " "run 2: capture time line"
expect_in "$WORK/r2.err" " (slowest " "run 2: its slowest capture"
expect_in "$WORK/r2.err" " at demo_engine(main+0x" "run 2: where the slowest began"
expect_in "$WORK/r2.err" "; first replay " "run 2: the first replay"
expect_in "$WORK/r1.err" "capguard: capture: 0 graphs in " "run 1: its broken capture is timed, no graph"
expect_not_in "$WORK/r1.err" "first replay" "run 1 never replayed"
n=$(ls "$m"/capguard_*.prom | wc -l)
[ "$n" -eq 2 ] && pass || fail "wanted 2 metrics files (one per process), found $n: $(ls -a "$m")"
ls -a "$m" | grep -q '\.tmp$' && fail "a temporary file was left in $m" || pass
python3 - "$WORK/r.jsonl" "$m" <<'PY' || fail "metrics files disagree with the log (above)"
import glob, json, re, sys
log, d = sys.argv[1], sys.argv[2]
summaries = [json.loads(l) for l in open(log) if '"type":"summary"' in l]
events = [json.loads(l) for l in open(log) if '"type":"event"' in l]
assert len(summaries) == 2, summaries
bad = 0
for s in summaries:
    pid = s["pid"]
    files = glob.glob(f"{d}/capguard_*_{pid}.prom")
    assert len(files) == 1, (pid, files)
    got = {}
    for line in open(files[0]):
        if line.startswith("#"):
            continue
        m = re.fullmatch(r'(\w+)\{([^}]*)\} (\S+)\n', line)
        assert m, line
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        assert labels["pid"] == str(pid) and labels["program"] == "demo_engine", labels
        assert labels["mode"] == "guard" and labels["host"], labels
        key = m.group(1) + "".join(f",{k}={labels[k]}" for k in ("verdict", "call", "reason") if k in labels)
        got[key] = float(m.group(3))
    mine = [e for e in events if e["pid"] == pid]
    loads = lambda v: sum(1 for e in mine if e["event"] == "module-load" and e["verdict"] == v)
    refused = {}
    for e in mine:
        if e["verdict"] in ("refused", "emulated"):
            refused[e["call"]] = refused.get(e["call"], 0) + 1
    want = {
        "capguard_captures_total": s["captures"],
        "capguard_captures_broken_total": s["captures_broken"],
        "capguard_capture_seconds_total": s["capture_ns"] / 1e9,
        "capguard_escapes_total": s["verdicts"]["escaped"],
        "capguard_loads_during_capture_total,verdict=served": loads("served"),
        "capguard_loads_during_capture_total,verdict=refused": loads("refused") + loads("emulated"),
        "capguard_loads_during_capture_total,verdict=allowed": loads("allowed"),
        "capguard_loads_during_capture_total,verdict=rescued": loads("rescued"),
        "capguard_request_path_loads_total": s["request_path_loads"],
        "capguard_request_path_load_seconds_total": s["request_path_load_ns"] / 1e9,
        # stale reads: one per graph exec and allocation the stale events name
        "capguard_stale_reads_total": len({(e["stale"]["exec"], e["stale"]["start"]) for e in mine
                                           if e["event"].startswith("stale-")}),
    }
    for call, n in refused.items():
        want[f"capguard_refusals_total,call={call}"] = n
    # the priming file as each found it: none yet for run 1, its one image for run 2
    images = 0 if s is summaries[0] else 1
    want.update({"capguard_prime_images": images, "capguard_prime_images_usable": images,
                 "capguard_prime_loads_served_total": loads("served")})
    for reason in ("arch", "format", "program"):
        want[f"capguard_prime_cannot_serve,reason={reason}"] = 0
    if "first_replay_ns" in s:
        want["capguard_first_replay_seconds"] = (s["first_replay_ns"] - s["first_capture_ns"]) / 1e9
    for k, v in want.items():
        if k not in got or abs(got[k] - v) > 1e-9:
            print(f"pid {pid}: {k} is {got.get(k)}, the log says {v}"); bad += 1
    for k in got:
        if k not in want:
            print(f"pid {pid}: {k} in the file, not in the log"); bad += 1
# the runs differ where they should: run 1 broke with one refused load, run 2 was served
r1, r2 = summaries
assert r1["captures_broken"] == 1 and r2["captures_broken"] == 0
assert sum(1 for e in events if e["pid"] == r1["pid"] and e["verdict"] == "emulated") == 1
assert sum(1 for e in events if e["pid"] == r2["pid"] and e["verdict"] == "served") == 1
sys.exit(1 if bad else 0)
PY
pass
# the report says the rest: text, JSON
run_cg rep report --all "$WORK/r.jsonl"
expect_in "$WORK/rep.out" "Capture time (wall time inside captures" "report: capture time section"
expect_in "$WORK/rep.out" "    slowest " "report: each process's slowest capture"
run_cg repj report --json "$WORK/r.jsonl"
python3 - "$WORK/repj.out" "$WORK/r.jsonl" <<'PY' && pass || fail "report --json capture_time"
import json, sys
r = json.load(open(sys.argv[1]))
s = [json.loads(l) for l in open(sys.argv[2]) if '"type":"summary"' in l][-1]
ct = r["processes"][0]["capture_time"]
assert ct["capture_ns"] == s["capture_ns"] and ct["captures_timed"] == 1, ct
assert ct["slowest"][0]["began"].startswith("demo_engine(main+0x"), ct
assert r["capture_time"]["graphs"] == 1 and r["capture_time"]["to_first_replay_ns"] > 0, r["capture_time"]
PY

# The accounting against the capture records of a process with many
# captures: the total is the sum of their end_ns - begin_ns, the slowest are
# the three longest, slowest first, with where each began.
CAPGUARD_LOG=$WORK/many.jsonl LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "$METRICS_PROBE" churn 0.5 >"$WORK/many.out" 2>&1
python3 - "$WORK/many.jsonl" "$WORK/many.out" <<'PY' && pass || fail "capture time disagrees with the capture records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
caps = [r for r in recs if r["type"] == "capture"]
s = [r for r in recs if r["type"] == "summary"][0]
n = int(open(sys.argv[2]).read().split("churn: ")[1].split()[0])
assert len(caps) == n == s["captures"] == s["captures_timed"] and n > 10, (len(caps), n, s)
# slowest first; of captures as long as each other (a coarse clock makes
# ties), the first to end is kept, as the shim keeps it
durs = sorted(((c["end_ns"] - c["begin_ns"], c["id"], c["began"]) for c in caps), key=lambda d: (-d[0], d[1]))
assert s["capture_ns"] == sum(d for d, _, _ in durs), (s["capture_ns"], sum(d for d, _, _ in durs))
got = [(x["ns"], x["id"], x["began"]) for x in s["slowest"]]
assert got == durs[:3], (got, durs[:3])
assert all(b.startswith("metrics_probe") for _, _, b in got), got  # where each began: the probe
PY

# Never written on a capture's path: not at an end while another capture is
# open (though the second has passed), only once nothing captures; at most
# once a second; a write left due is made at the next graph launch.
t=$WORK/timing
mkdir -p "$t"
CAPGUARD_METRICS=$t LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "$METRICS_PROBE" timing "$t" >"$WORK/timing.out" 2>"$WORK/timing.err"
rc=$?
expect_rc 0 "metrics_probe timing"
for line in "first end: written" "end while another capture is open: not written" \
            "end of the last open capture: written" "end within the second: not written" \
            "graph launch after the second: written"; do
  expect_in "$WORK/timing.out" "$line" "timing"
done

# A reader racing the writers never sees part of a file, nor a file changed
# in place: each read is whole, and what an open descriptor reads stays the
# same (a rename gives the new text a new file). Three processes capture
# back to back for 3 s each (about three writes each, plus the last).
race=$WORK/race
mkdir -p "$race"
for i in 1 2 3; do
  CAPGUARD_METRICS=$race LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "$METRICS_PROBE" churn 3 >"$WORK/churn$i.out" 2>&1 &
done
python3 - "$race" <<'PY' && pass || fail "a reader saw a partial or rewritten metrics file"
import glob, os, re, sys, time
d = sys.argv[1]
line = re.compile(r'(# (HELP|TYPE) \w+ .*|\w+\{[^}]*\} [0-9.e+-]+)')
reads, versions, start = 0, {}, time.time()
while time.time() - start < 4.5:
    for f in glob.glob(f"{d}/capguard_*.prom"):
        try:
            fd = os.open(f, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            a = os.pread(fd, 1 << 16, 0)
            time.sleep(0.0005)
            b = os.pread(fd, 1 << 16, 0)
        finally:
            os.close(fd)
        reads += 1
        text = a.decode()
        if a != b:
            sys.exit(f"{f} changed under an open descriptor:\n{a!r}\n{b!r}")
        if not text.endswith("\n") or not all(line.fullmatch(l) for l in text.splitlines()):
            sys.exit(f"{f}: not a whole file:\n{text}")
        if "capguard_escapes_total{" not in text:
            sys.exit(f"{f}: cut short:\n{text}")
        versions.setdefault(f, set()).add(a)
many = sum(len(v) for v in versions.values())
print(f"{reads} reads of {len(versions)} files, {many} versions seen")
sys.exit(0 if len(versions) == 3 and many >= 6 else f"too few writes seen: {many} versions")
PY
wait
grep -q "churn: " "$WORK/churn1.out" && pass || fail "churn: $(cat "$WORK/churn1.out")"

# The rule: the first write of a process removes the files of its own pid
# namespace whose process is gone and which were last written 10 minutes
# ago or more; files of live processes, of the last 10 minutes, of other
# namespaces (whose pids it cannot check) and other files stay.
c=$WORK/clean
mkdir -p "$c"
ns=$(stat -L -c %i /proc/self/ns/pid)
sh -c 'exit 0' & dead=$!; wait $dead
sleep 300 & live=$!
touch -d '20 minutes ago' "$c/capguard_${ns}_${dead}.prom" "$c/capguard_${ns}_${live}.prom" \
  "$c/capguard_999_${dead}.prom" "$c/other_${dead}.prom" "$c/capguard_${ns}_${dead}.prom.txt"
touch -d '5 minutes ago' "$c/capguard_${ns}_${dead}9.prom"
CAPGUARD_METRICS=$c LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "${engine[@]}" >/dev/null 2>&1
kill $live 2>/dev/null; wait $live 2>/dev/null
[ ! -e "$c/capguard_${ns}_${dead}.prom" ] && pass || fail "an exited process's old file was kept"
for keep in "capguard_${ns}_${live}.prom" "capguard_999_${dead}.prom" "other_${dead}.prom" \
            "capguard_${ns}_${dead}.prom.txt" "capguard_${ns}_${dead}9.prom"; do
  [ -e "$c/$keep" ] && pass || fail "$keep was removed"
done
[ "$(ls "$c" | grep -c "^capguard_${ns}_[0-9]*\.prom$")" -eq 3 ] && pass || fail "the engine's own file: $(ls "$c")"

# A write that fails costs the host one warning, nothing else: no such
# directory, and a file size limit (no SIGXFSZ).
CAPGUARD_METRICS=$WORK/nowhere LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "${engine[@]}" >"$WORK/nodir.out" 2>"$WORK/nodir.err"
rc=$?
expect_rc 0 "no such metrics directory: the engine runs on"
expect_in "$WORK/nodir.out" "engine: decode graph captured and replayed; serving" "the engine served"
[ "$(grep -c "cannot write the metrics file in $WORK/nowhere" "$WORK/nodir.err")" -eq 1 ] && pass \
  || fail "wanted one warning: $(cat "$WORK/nodir.err")"
f=$WORK/fsize
mkdir -p "$f"
(ulimit -f 1; CAPGUARD_QUIET=1 CAPGUARD_PRIME_READONLY=1 CAPGUARD_METRICS=$f LD_PRELOAD=$REAL_SHIM CAPGUARD_SUMMARY=0 "${engine[@]}") \
  >"$WORK/fsize.out" 2>"$WORK/fsize.err"
rc=$?
expect_rc 0 "metrics file over the size limit: no SIGXFSZ"
[ "$(grep -c "cannot write the metrics file in $f (write: File too large)" "$WORK/fsize.err")" -eq 1 ] && pass \
  || fail "wanted one warning: $(cat "$WORK/fsize.err")"
ls -a "$f" | grep -q 'capguard' && fail "a part of a file was left: $(ls -a "$f")" || pass
finish
