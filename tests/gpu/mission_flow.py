#!/usr/bin/env python3
"""The mission test: the seed's flow in miniature, on a real GPU, with
CUDA_MODULE_LOADING unset as users run it. The engine (mission_engine.py)
captures one graph per batch size whose body is the first launch of a
Triton kernel specialised for that size and of torch.cat, whose kernel the
CUDA runtime loads lazily with library options. On an emulated 12.2 driver
(which refuses module loads during capture):
  1. guard mode with a fresh priming file converges, in at most one run more
     than the distinct loads made during capture;
  2. learn on the real driver, check, deploy: every size captures at the
     first run, sizes never seen at learn time included;
  3. --rescue, then a run without it: both capture every size.
Also prints which options each kind of load passed (the runtime's lazy
load, Triton's, CuPy's when CuPy is here), from the learn run's log.

Usage (repo root, build folder 'build'): python3 tests/gpu/mission_flow.py [--out DIR]
Exit 77 (skipped) without a GPU, torch or Triton; 1 when a check fails."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_here  # noqa: E402
from lazy_loads import Checks, read_events  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.join(HERE, "mission_engine.py")
LEARN_SIZES = "512,256,128,64"
UNSEEN_SIZES = "448,192,96,32"  # never seen at learn time: as many sizes, other values


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    e.pop("CUDA_MODULE_LOADING", None)  # as users run it: the runtime's default, lazy
    e["PYTHONUNBUFFERED"] = "1"
    return e


def cg(cli, args, log, save, extra_env=None):
    e = env()
    e.update(extra_env or {})
    p = subprocess.run([cli, *args], env=e, capture_output=True, text=True, timeout=300)
    with open(save, "w") as f:
        f.write(p.stdout + p.stderr)
    captured = next((l.split()[1] for l in p.stdout.splitlines() if l.startswith("RESULT")), "none")
    return p, captured, read_events(log) if log else []


def engine(sizes):
    return ["--", sys.executable, ENGINE, sizes]


def all_of(captured, sizes):
    n = len(sizes.split(","))
    return captured == f"captured={n}/{n}"


def load_events(events):
    return [e for e in events if e.get("event") == "module-load"]


def converge(cli, out, checks, rows):
    prime = os.path.join(out, "fresh.cgp")
    runs, captured, loads = 0, "", 0
    for runs in range(1, 16):
        log = os.path.join(out, f"fresh-{runs}.jsonl")
        p, captured, ev = cg(cli, ["run", "-q", "--emulate-driver", "12020", "--prime", prime, "--log", log,
                                   *engine(LEARN_SIZES)], log, os.path.join(out, f"fresh-{runs}.out"))
        print(f"fresh run {runs}: {captured} rc={p.returncode}", flush=True)
        if all_of(captured, LEARN_SIZES):
            loads = sum(1 for e in load_events(ev) if e.get("verdict") == "served")
            break
    checks(all_of(captured, LEARN_SIZES), f"guard, fresh file: converged ({captured} at run {runs})")
    checks(loads > 0 and runs <= loads + 1, f"guard, fresh file: {runs} runs for {loads} distinct loads (at most {loads + 1})")
    rows.append(("guard mode, fresh priming file", f"{captured.split('=')[1]} after {runs} runs ({loads} loads during capture)"))


def learn_deploy(cli, out, checks, rows):
    prime = os.path.join(out, "learned.cgp")
    log = os.path.join(out, "learn.jsonl")
    p, captured, ev = cg(cli, ["prime", "learn", "--prime", prime, "--log", log, *engine(LEARN_SIZES)], log,
                         os.path.join(out, "learn.out"))
    checks(p.returncode == 0 and all_of(captured, LEARN_SIZES), f"learn on the real driver: rc {p.returncode}, {captured}")
    for e in load_events(ev):
        print(f"LOAD {e.get('call')} options={e.get('load_options', 'none')} verdict={e.get('verdict')} "
              f"kernels={(e.get('image') or {}).get('kernels', [])[:2]}", flush=True)
    with_opts = [e for e in load_events(ev) if e.get("load_options")]
    checks(any("CU_LIBRARY_BINARY_IS_PRESERVED=1" in e["load_options"] for e in with_opts),
           "the runtime's lazy load passed CU_LIBRARY_BINARY_IS_PRESERVED=1, and was recorded with it")
    log = os.path.join(out, "check.jsonl")
    p, captured, _ = cg(cli, ["prime", "check", "--prime", prime, "--log", log, *engine(LEARN_SIZES)], log,
                        os.path.join(out, "check.out"))
    checks(p.returncode == 0, f"prime check: rc {p.returncode} ({captured})")
    rows.append(("learn on the real driver, then check", f"learn {captured.split('=')[1]}, check rc {p.returncode}"))
    for name, sizes in (("deploy", LEARN_SIZES), ("deploy, sizes never seen at learn time", UNSEEN_SIZES)):
        tag = name.split(",")[0] + ("-unseen" if sizes == UNSEEN_SIZES else "")
        log = os.path.join(out, f"{tag}.jsonl")
        p, captured, ev = cg(cli, ["run", "-q", "--emulate-driver", "12020", "--prime", prime, "--log", log,
                                   *engine(sizes)], log, os.path.join(out, f"{tag}.out"),
                             {"CAPGUARD_PRIME_READONLY": "1"})
        served = sum(1 for e in load_events(ev) if e.get("verdict") == "served")
        checks(all_of(captured, sizes), f"{name} on emulated 12.2, first run: {captured} ({served} served)")
        rows.append((f"{name} (emulated 12.2, first run)", f"{captured.split('=')[1]}, {served} loads served"))


def rescue(cli, out, checks, rows):
    prime = os.path.join(out, "rescued.cgp")
    got = []
    for i, extra in enumerate((["--rescue"], [])):
        log = os.path.join(out, f"rescue-{i}.jsonl")
        p, captured, _ = cg(cli, ["run", "-q", *extra, "--emulate-driver", "12020", "--prime", prime, "--log", log,
                                  *engine(LEARN_SIZES)], log, os.path.join(out, f"rescue-{i}.out"))
        checks(all_of(captured, LEARN_SIZES), f"{'--rescue' if extra else 'then without it'}: {captured}")
        got.append(captured.split("=")[1])
    rows.append(("`--rescue`, then a run without it", f"{got[0]}, then {got[1]}"))


def cupy_options(cli, out):
    """Which options CuPy's RawKernel load passes (a first launch inside a capture), if CuPy is here."""
    code = ("import cupy as cp\n"
            "k = cp.RawKernel(r'extern \"C\" __global__ void cg_mission_cupy(float *x) { x[threadIdx.x] *= 2; }', "
            "'cg_mission_cupy')\n"
            "x = cp.ones(32, dtype=cp.float32); s = cp.cuda.Stream(non_blocking=True)\n"
            "with s:\n  s.begin_capture(mode=cp.cuda.runtime.streamCaptureModeGlobal); k((1,), (32,), (x,)); g = s.end_capture()\n"
            "print('RESULT cupy=captured')\n")
    log = os.path.join(out, "cupy.jsonl")
    p, _, ev = cg(cli, ["run", "-q", "--mode", "report", "--log", log, "--", sys.executable, "-c", code], log,
                  os.path.join(out, "cupy.out"))
    loads = load_events(ev)
    for e in loads:
        print(f"LOAD cupy {e.get('call')} options={e.get('load_options', 'none')}", flush=True)
    return loads, p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    why = gpu_here.skip_reason()
    if why:
        print(f"SKIP mission_flow: {why}")
        return 77
    cli = os.path.abspath(os.path.join(a.build, "tools", "capguard"))
    out = a.out or tempfile.mkdtemp(prefix="cg-mission-")
    os.makedirs(out, exist_ok=True)
    checks, rows = Checks("mission"), []
    converge(cli, out, checks, rows)
    learn_deploy(cli, out, checks, rows)
    rescue(cli, out, checks, rows)
    try:
        import cupy  # noqa: F401
        loads, rc = cupy_options(cli, out)
        rows.append(("CuPy RawKernel load (report mode, real driver)",
                     ", ".join(f"{e.get('call')} options={e.get('load_options', 'none')}" for e in loads) or f"no load seen (rc {rc})"))
    except ImportError:
        rows.append(("CuPy RawKernel load", "CuPy not here"))
    print("| step | result |\n|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} |")
    return checks.finish(out)


if __name__ == "__main__":
    sys.exit(main())
