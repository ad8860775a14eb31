#!/usr/bin/env python3
"""Loads on the request path, on a real GPU: an engine serves (replays its
graphs past the quiet window), then a request meets a new Triton
specialisation and a torch op first used there (tests/gpu/request_engine.py).
  1. guard mode, a fresh priming file: both loads are named as request-path
     loads (the Triton kernel, and the CUDA runtime's lazy load of cumsum's
     module), with their Python lines and the time of each load call;
  2. the same again: both are served from the priming file, and the time in
     the load calls falls;
  3. without capguard, CUDA_MODULE_LOADING=EAGER against its default: the
     start-up cost of loading every runtime module at start.
Prints a table, and 'request_path: N passed, M failed'; exit 77 without a
GPU, torch or Triton.

  python3 tests/gpu/request_path_gpu.py [--build build] [--out DIR]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_here  # noqa: E402
from lazy_loads import Checks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.join(HERE, "request_engine.py")


def env(**more):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    e.pop("CUDA_MODULE_LOADING", None)
    e["PYTHONUNBUFFERED"] = "1"
    e.update(more)
    return e


def figures(stdout):
    return {l.split()[0]: l.split()[1] for l in stdout.splitlines() if l[:6] in ("START_", "REQUES", "RESULT")}


def requests(log):
    if not os.path.exists(log):
        return []
    recs = [json.loads(l) for l in open(log) if l.strip()]
    return [r for r in recs if r.get("type") == "event" and r.get("event") == "request-path-load"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    why = gpu_here.skip_reason()
    if why:
        print(f"SKIP request_path: {why}")
        return 77
    cli = os.path.abspath(os.path.join(a.build, "tools", "capguard"))
    out = a.out or tempfile.mkdtemp(prefix="cg-request-")
    os.makedirs(out, exist_ok=True)
    check = Checks("request_path")
    prime = os.path.join(out, "request.cgp")
    rows = []
    got = {}
    for run in (1, 2):
        log = os.path.join(out, f"run{run}.jsonl")
        p = subprocess.run([cli, "run", "--prime", prime, "--log", log, "--", sys.executable, ENGINE], env=env(),
                           capture_output=True, text=True, timeout=300)
        with open(os.path.join(out, f"run{run}.txt"), "w") as f:
            f.write(p.stdout + p.stderr)
        fig, rq = figures(p.stdout), requests(log)
        got[run] = (fig, rq)
        for e in rq:
            py = (e.get("python_stack") or [{}])[0]
            print(f"run {run}: {e['call']} {e['verdict']} {e['load_ns'] / 1e6:.3f} ms "
                  f"{(e.get('image') or {}).get('kernels', [])[:1]} at {py.get('file', '?')}:{py.get('line', '?')} "
                  f"options={e.get('load_options', 'none')}", flush=True)
        said = [l for l in p.stderr.splitlines() if "on the request path" in l]
        print(f"run {run}: rc {p.returncode}, {fig}, said: {said[-1][:300] if said else None}", flush=True)
        check(p.returncode == 0 and fig.get("RESULT") == "ok", f"run {run}: the engine served right (rc {p.returncode})")
    fig1, rq1 = got[1]
    triton = [e for e in rq1 if any("_cg_request_scale" in k for k in (e.get("image") or {}).get("kernels", []))]
    lazy = [e for e in rq1 if e.get("call") == "cuLibraryLoadData"]
    lines = lambda es: all(any("request_engine.py" in f.get("file", "") for f in e.get("python_stack", [])) for e in es)
    check(triton and lines(triton), "run 1: the Triton kernel's load named on the request path, with its Python line")
    check(lazy and lines(lazy), "run 1: the runtime's lazy load (cumsum) named on the request path, with its Python line")
    said1 = [l for l in open(os.path.join(out, "run1.txt")).read().splitlines() if "on the request path" in l]
    check(said1 and "kernels unnamed" not in said1[-1] and "kernels " in said1[-1],
          f"run 1: capguard names the runtime's compressed kernels from their library's file: {said1[-1][:400] if said1 else None}")
    fig2, rq2 = got[2]
    served = [e for e in rq2 if e.get("verdict") == "served"]
    t1 = sum(e["load_ns"] for e in rq1) / 1e6
    t2 = sum(e["load_ns"] for e in rq2) / 1e6
    check(len(served) == len(rq2) and len(rq2) >= 2, f"run 2: every request-path load served ({len(served)} of {len(rq2)})")
    check(t2 < t1, f"run 2: time in the load calls {t2:.3f} ms against {t1:.3f} ms")
    rows.append(("guard, fresh file (run 1)", f"{len(rq1)} request-path loads, {t1:.2f} ms in the load calls; request {fig1.get('REQUEST_MS')} ms"))
    rows.append(("guard, the same file (run 2)", f"{len(served)} served, {t2:.3f} ms in the load calls; request {fig2.get('REQUEST_MS')} ms"))
    # CUDA_MODULE_LOADING=EAGER without capguard: its start-up cost
    start = {}
    for mode in ("LAZY", "EAGER"):
        p = subprocess.run([sys.executable, ENGINE], env=env(CUDA_MODULE_LOADING=mode), capture_output=True,
                           text=True, timeout=300)
        start[mode] = figures(p.stdout)
    rows.append(("without capguard, CUDA_MODULE_LOADING=LAZY", f"start-up {start['LAZY'].get('START_S')} s, request {start['LAZY'].get('REQUEST_MS')} ms"))
    rows.append(("without capguard, CUDA_MODULE_LOADING=EAGER", f"start-up {start['EAGER'].get('START_S')} s, request {start['EAGER'].get('REQUEST_MS')} ms"))
    # What capguard adds to the request: the same request-path loads made by
    # the driver with capguard watching (report mode: nothing served)
    # against no capguard at all, interleaved, medians of 3.
    alone, watched = [], []
    for i in range(3):
        p = subprocess.run([sys.executable, ENGINE], env=env(), capture_output=True, text=True, timeout=300)
        alone.append(float(figures(p.stdout).get("REQUEST_MS", "nan")))
        log = os.path.join(out, f"watched{i}.jsonl")
        p = subprocess.run([cli, "run", "--mode", "report", "--log", log, "--", sys.executable, ENGINE], env=env(),
                           capture_output=True, text=True, timeout=300)
        watched.append(float(figures(p.stdout).get("REQUEST_MS", "nan")))
        n_watched = len(requests(log))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    added = med(watched) - med(alone)
    per_load = added / max(n_watched, 1)
    print(f"request without capguard {alone} ms, watched (report mode) {watched} ms: +{added:.2f} ms for "
          f"{n_watched} request-path loads, {per_load:.3f} ms a load", flush=True)
    check(n_watched >= 2, f"report mode names the request-path loads too ({n_watched})")
    check(per_load < 0.5, f"watching a request-path load adds under 0.5 ms to the request: {per_load:.3f} ms a load")
    rows.append(("capguard watching (report mode) against none, medians of 3",
                 f"request {med(watched):.1f} ms against {med(alone):.1f} ms: {added:+.2f} ms for {n_watched} loads"))
    print("| run | result |\n|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} |")
    return check.finish(out)


if __name__ == "__main__":
    sys.exit(main())
