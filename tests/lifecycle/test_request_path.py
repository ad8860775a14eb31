"""Loads on the request path, over the fake driver (13.0): a start-up that
captures (a load during capture), replays the graph (cuGraphLaunch), then
loads another image outside any capture, as a request's first use of a
kernel would.

- The load is named (request-path-load: its kernels, its call site), timed
  (load_ns) and counted (the summary, run's summary line, the metrics file).
- A start-up in waves (capture, replay, a load, capture again 200 ms later,
  replay, a load) is not cut early: only the load after the last wave
  counts, in the shim's summary and in capguard's reading of the log.
- In guard mode the load is recorded, and the next run serves it from the
  priming file (verdict served on the request path).
- capguard run --request-path-loads=error exits non-zero; the default 0.
- CAPGUARD_SERVING_AFTER with a bad value is said in one line."""
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "routes"))
from routes_common import FAKE_DIR  # noqa: E402

PROBE = os.environ["CG_JIT_PROBE"]
CLI = os.environ["CG_CLI"]
DATA = os.environ["CG_FAKE_DATA"]
PTX = os.path.join(DATA, "kernels.ptx")
CUBIN = os.path.join(DATA, "kernels_sm90.cubin")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(tmp, name, prime, extra=(), quiet=True, **env_more):
    log = os.path.join(tmp, name + ".jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env.update(LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000", JIT_PROBE_IMAGE2=CUBIN)
    env.update(env_more)
    p = subprocess.run([CLI, "run", *(["-q"] if quiet else []), "--prime", prime, "--log", log, *extra, "--", PROBE, PTX, "serve"],
                       env=env, capture_output=True, text=True, timeout=60)
    recs = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
    return p, recs


def requests(recs):
    return [r for r in recs if r["type"] == "event" and r["event"] == "request-path-load"]


def summary(recs):
    return next((r for r in recs if r["type"] == "summary"), {})


with tempfile.TemporaryDirectory() as tmp:
    prime = os.path.join(tmp, "p.cgp")
    metrics = os.path.join(tmp, "metrics")
    os.mkdir(metrics)
    p, recs = run(tmp, "one", prime, ["--metrics", metrics])
    rq = requests(recs)
    check(p.returncode == 0 and len(rq) == 1, f"one load on the request path logged ({len(rq)}; rc {p.returncode})")
    if rq:
        e = rq[0]
        check(e["call"] == "cuModuleLoadData" and set(e["image"]["kernels"]) == {"fake_add_one", "fake_scale"},
              f"named: the call and its kernels ({e['call']}, {e['image']['kernels']})")
        check(e["load_ns"] > 0 and e["after_serving_ns"] >= 0, f"timed: load_ns {e['load_ns']}")
        check(any("jit_probe+" in f for f in e["native_stack"]), "its native stack names the call site")
    s = summary(recs)
    check(s.get("request_path_loads") == 1 and s.get("serving_began") is True,
          f"the summary counts it: {s.get('request_path_loads')}")
    check("capguard: 1 load on the request path" in p.stderr and "kernels fake_" in p.stderr,
          f"run's summary says it: {p.stderr[-800:]}")
    prom = "".join(open(f).read() for f in glob.glob(os.path.join(metrics, "*.prom")))
    check('capguard_request_path_loads_total{' in prom and '} 1\n' in prom.split("capguard_request_path_loads_total{")[1][:400],
          "the metrics file counts it")

    # The report's page and trace show it.
    log = os.path.join(tmp, "one.jsonl")
    html = os.path.join(tmp, "one.html")
    trace = os.path.join(tmp, "one.trace.json")
    subprocess.run([CLI, "report", "--html", html, log], capture_output=True, text=True, timeout=60)
    subprocess.run([CLI, "report", "--trace", trace, log], capture_output=True, text=True, timeout=60)
    page = open(html).read() if os.path.exists(html) else ""
    check("<h2>Loads on the request path</h2>" in page and "fake_scale" in page, "the page has a row for it")
    check("load on the request path</span>" in page and "on the request path, " in page.split("<svg", 1)[-1],
          "the timeline marks it, and the legend keys the mark")
    tr = json.load(open(trace)) if os.path.exists(trace) else {"traceEvents": []}
    xs = [t for t in tr["traceEvents"] if t.get("cat") == "request-path-load"]
    check(len(xs) == 1 and xs[0]["ph"] == "X" and xs[0]["dur"] > 0, f"the trace has it as long as the load call: {xs}")
    rj = subprocess.run([CLI, "report", "--json", log], capture_output=True, text=True, timeout=60)
    totals = json.loads(rj.stdout).get("totals", {}) if rj.stdout.startswith("{") else {}
    check(totals.get("request_path_loads") == 1, f"report --json counts it: {totals.get('request_path_loads')}")

    # Counted per process and rank: the JSON's process has its count and
    # rank, the page's row its rank.
    p, recs = run(tmp, "ranked", os.path.join(tmp, "r.cgp"), RANK="3", WORLD_SIZE="4")
    rlog = os.path.join(tmp, "ranked.jsonl")
    rj = subprocess.run([CLI, "report", "--json", rlog], capture_output=True, text=True, timeout=60)
    procs = json.loads(rj.stdout).get("processes", []) if rj.stdout.startswith("{") else []
    mine = [q for q in procs if q.get("request_path_loads")]
    check(len(mine) == 1 and mine[0].get("rank") == 3 and mine[0]["request_path_loads"] == 1,
          f"report --json counts it on its process, with its rank: {[(q.get('rank'), q.get('request_path_loads')) for q in procs]}")
    rhtml = os.path.join(tmp, "ranked.html")
    subprocess.run([CLI, "report", "--html", rhtml, rlog], capture_output=True, text=True, timeout=60)
    page = open(rhtml).read() if os.path.exists(rhtml) else ""
    check("<th>rank</th>" in page and "</td><td>3</td><td>" in page.split("Loads on the request path", 1)[-1],
          "the page's row names its rank")

    # The next run in guard mode serves it from the priming file.
    p, recs = run(tmp, "two", prime)
    rq = requests(recs)
    check(len(rq) == 1 and rq[0]["verdict"] == "served",
          f"the next run serves the request-path load from the priming file: {[r['verdict'] for r in rq]}")
    check("1 served from the priming file" in p.stderr, "and says so")

    # A start-up in waves: the load between the waves is the start-up's.
    wprime = os.path.join(tmp, "w.cgp")
    p, recs = run(tmp, "waves", wprime, JIT_PROBE_WAVE="1")
    rq = requests(recs)
    s = summary(recs)
    check(len(rq) == 2 and rq[0].get("provisional") is True, f"both loads logged, the first provisional ({len(rq)})")
    check(s.get("request_path_loads") == 1, f"the shim counts only the load after the last wave: {s.get('request_path_loads')}")
    check("capguard: 1 load on the request path" in p.stderr, f"run counts only that one: {p.stderr[-600:]}")

    # The gate.
    p, _ = run(tmp, "gate", os.path.join(tmp, "g.cgp"), ["--request-path-loads=error"])
    check(p.returncode == 1, f"--request-path-loads=error exits 1 (got {p.returncode})")
    p, _ = run(tmp, "gate2", os.path.join(tmp, "g2.cgp"), ["--request-path-loads=error", "--error-exitcode", "9"])
    check(p.returncode == 9, f"with --error-exitcode 9: 9 (got {p.returncode})")
    p, _ = run(tmp, "bad", os.path.join(tmp, "b.cgp"), ["--request-path-loads=maybe"])
    check(p.returncode == 2 and "--request-path-loads must be report or error" in p.stderr, "a bad value refused")

    # A zstd fatbin from a library's own read-only data (as the CUDA
    # runtime's lazy loads come from torch's .nv_fatbin): not decompressed
    # on the request path; the log says which file holds it, and capguard
    # report names its kernels from there, only while the bytes there hash
    # to the logged image.
    p, recs = run(tmp, "packed", os.path.join(tmp, "z.cgp"), quiet=False, JIT_PROBE_IMAGE2="@embedded")
    rq = requests(recs)
    src = rq[0].get("image_source", {}) if rq else {}
    check(len(rq) == 1 and rq[0]["image"]["kernels"] == [] and
          src.get("object", "").endswith("/libcg_embedded_image.so") and src.get("offset", 0) > 0,
          f"its compressed kernels left unread, its object named: {rq[0].get('image') if rq else None}, {src}")
    check("(compressed: capguard report reads their names from " in p.stderr, f"stderr says where: {p.stderr[-900:]}")
    log = os.path.join(tmp, "packed.jsonl")
    r = subprocess.run([CLI, "report", log], capture_output=True, text=True, timeout=60)
    check("kernels cg_test_fill, cg_test_axpy" in r.stdout, f"capguard report names them from the file: {r.stdout[-700:]}")
    bent = os.path.join(tmp, "bent.jsonl")
    with open(bent, "w") as f:
        for line in open(log):
            f.write(line.replace('"offset":%d' % src.get("offset", 0), '"offset":%d' % (src.get("offset", 0) + 16)))
    r = subprocess.run([CLI, "report", bent], capture_output=True, text=True, timeout=60)
    check("1 load on the request path" in r.stdout and "cg_test_fill" not in r.stdout,
          f"bytes that do not hash to the image name nothing: {r.stdout[-500:]}")

    # A bad CAPGUARD_SERVING_AFTER: run refuses it before the start (the shim would warn).
    p, _ = run(tmp, "after", os.path.join(tmp, "a.cgp"), CAPGUARD_SERVING_AFTER="soon")
    check(p.returncode != 0 and "CAPGUARD_SERVING_AFTER" in p.stderr, f"CAPGUARD_SERVING_AFTER=soon refused: {p.stderr[-300:]}")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
