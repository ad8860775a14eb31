"""Records are never dropped without a word: an overlong field is cut with a
visible mark, never the record; an overlong CAPGUARD_PRIME is said to be too
long; a second copy of the shim in LD_PRELOAD stays silent."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "routes"))
from routes_common import FAKE_DIR, PROBE, SHIM  # noqa: E402

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(argv0_and_args, env_extra, preload=SHIM):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000", CAPGUARD_MODE="report",
                   CAPGUARD_LOG=os.path.join(tmp, "log.jsonl"), CAPGUARD_PRIME=os.path.join(tmp, "p.cgp"),
                   LD_PRELOAD=preload)
        env.update(env_extra)
        p = subprocess.run(argv0_and_args, executable=PROBE, env=env, capture_output=True, text=True, timeout=60)
        log = env["CAPGUARD_LOG"]
        records = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
        return p, records


def types(records):
    return [r["type"] for r in records]


probe_args = ["--route", "dlsym", "--op", "none"]

# A 20,000-byte CAPGUARD_RUN: the start and process records are written,
# the run cut to 1024 bytes with a mark saying how much is left out.
p, recs = run(["probe"] + probe_args, {"CAPGUARD_RUN": "r" * 20000})
check(p.returncode == 0, f"probe ran (rc {p.returncode}: {p.stderr[-300:]})")
check(types(recs).count("start") == 1 and types(recs).count("process") == 1,
      f"start and process records written with a 20,000-byte CAPGUARD_RUN: {types(recs)}")
for r in recs:
    if r["type"] in ("start", "process"):
        check(r.get("run") == "r" * 1024 + "...[cut: 18976 bytes]", f"{r['type']} record's run is cut with a mark")
check(all(len(json.dumps(r)) < 65536 for r in recs), "every record stays under 64 KiB")

# argv of 2,000 control characters, in one word and in 2,000 words.
ctrl = "\x01" * 2000
p, recs = run([ctrl] + probe_args, {})
start = [r for r in recs if r["type"] == "start"]
check(len(start) == 1, f"start record written with an argv[0] of 2,000 control characters: {types(recs)}")
if start:
    check(start[0]["argv"][0] == "\x01" * 1024 + "...[cut: 976 bytes]", "the word is cut with a mark")
    check(start[0]["argv"][1:5] == probe_args, f"the next words follow: {start[0]['argv'][1:5]}")
check("process" in types(recs), "process record written too")

# The probe refuses the extra words before any CUDA call: its start record is
# written at start-up only as capguard run's own child (CAPGUARD_RUN names
# run's pid first), which this test stands in for.
words = ["probe"] + probe_args + ["\x02"] * 2000
p, recs = run(words, {"CAPGUARD_RUN": f"{os.getpid()}-1"})
start = [r for r in recs if r["type"] == "start"]
check(len(start) == 1, "start record written with 2,000 more words")
if start:
    check(start[0]["argv"][:5] == ["probe"] + probe_args, "the first words are kept")
    check(start[0]["argv"][-1] == "...[cut: more words]" and len(start[0]["argv"]) == 16,
          f"the words left out are said: {start[0]['argv'][-2:]}")

# A 5,000-byte CAPGUARD_PRIME is too long, not unset.
p, recs = run(["probe"] + probe_args, {"CAPGUARD_MODE": "guard", "CAPGUARD_PRIME": "/tmp/" + "p" * 4995})
check("CAPGUARD_PRIME is 5000 bytes long" in p.stderr, f"an overlong CAPGUARD_PRIME is said: {p.stderr[:300]!r}")
check("not set" not in p.stderr, "and not reported as not set")
check(p.stderr.count("CAPGUARD_PRIME") == 1, "in one line")

# Two copies of the shim: one start record, one process record, one summary.
with tempfile.TemporaryDirectory() as tmp:
    copy = os.path.join(tmp, "libcapguard-copy.so")
    shutil.copy(SHIM, copy)
    # With an object before both that is not a capguard (libm: no cu*), the
    # first copy still finds none before it from the objects' own symbol
    # tables, and the second still finds the first (shim/driver/other_copy.c).
    for order in ([SHIM, copy], [copy, SHIM], ["libm.so.6", SHIM, copy], ["libm.so.6", copy, SHIM]):
        p, recs = run(["probe"] + probe_args, {}, preload=" ".join(order))
        t = types(recs)
        check(p.returncode == 0 and t.count("start") == 1 and t.count("process") == 1 and t.count("summary") == 1,
              f"two copies in LD_PRELOAD ({' '.join(os.path.basename(o) for o in order)}): one start, "
              f"process and summary record: {t}")
        check(p.stderr.count("capguard: 1 capture") == 1, f"one summary line on stderr: {p.stderr[-400:]!r}")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
