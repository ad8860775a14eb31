#!/usr/bin/env python3
"""A Python engine killed by SIGKILL mid-capture, on a real GPU (torch, Triton):
its Triton kernel is first launched inside torch.cuda.graph, capguard emulates
driver 12.2 (the load is refused and recorded), and the engine kills itself
with SIGKILL while the capture is open, as the OOM killer or a watchdog would.
  run 1: capguard run exits 137; its summary names signal 9 (SIGKILL) and the
         process that ended without an exit record, says to run it again
         (the image was recorded), never "nothing was recorded"; the priming
         file holds the image; capguard report (text and --html) exits 1 and
         lists the process with its signal;
  run 2: the same command with the same file: the load is served.
Prints PASS/FAIL lines and "killed_engine: N passed, M failed"; exit 0 when
none failed. Usage (from the repository root): python3 tests/gpu/killed_engine.py [--build build]
(--engine runs the engine itself.)"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile


def engine():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def _capguard_killed_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)

    n, block = 4096, 256
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        try:
            _capguard_killed_kernel[(n // block,)](x, n, BLOCK=block)  # first launch: the load
        finally:
            print("engine: killing myself mid-capture", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--engine", action="store_true")
    args = ap.parse_args()
    if args.engine:
        engine()
        return 3
    cli = os.path.abspath(os.path.join(args.build, "tools", "capguard"))
    tmp = tempfile.mkdtemp(prefix="capguard-killed-")
    prime = os.path.join(tmp, "p.cgp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env["PYTHONUNBUFFERED"] = "1"
    passed = failed = 0

    def check(cond, what):
        nonlocal passed, failed
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        passed += bool(cond)
        failed += not cond

    def run(name):
        log = os.path.join(tmp, name + ".jsonl")
        p = subprocess.run([cli, "run", "-q", "--emulate-driver", "12020", "--log", log, "--prime", prime, "--",
                            sys.executable, os.path.abspath(__file__), "--engine"],
                           env=env, capture_output=True, text=True, timeout=120)
        print(f"--- {name}: exit {p.returncode}\n{p.stderr}", flush=True)
        with open(log) as f:
            records = [json.loads(l) for l in f if l.strip()]
        return p, log, [r for r in records if r.get("type") == "event"]

    p, log, events = run("run1")
    check(p.returncode == 137, "run 1: capguard run exits 137 (128+SIGKILL)")
    check("was killed by signal 9 (SIGKILL)" in p.stderr, "run 1: the summary names signal 9 (SIGKILL)")
    check("1 process ended without an exit record" in p.stderr, "run 1: the process without an exit record is said")
    check("nothing was recorded" not in p.stderr, "run 1: not 'nothing was recorded'")
    check("capguard: next: run it again" in p.stderr, "run 1: next: run it again")
    check(any(e.get("call", "").startswith("cu") and e.get("event") == "module-load" and e.get("verdict") == "emulated"
              and "_capguard_killed_kernel" in e.get("image", {}).get("kernels", []) for e in events),
          "run 1: the kernel's load was refused (emulated) and logged")
    check(os.path.exists(prime) and os.path.getsize(prime) > 0, "run 1: the priming file holds the image")
    r = subprocess.run([cli, "report", log], env=env, capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "Ended without an exit record" in r.stdout, "run 1: capguard report exits 1 and lists it")
    check("killed by signal 9 (SIGKILL)" in r.stdout,
          "run 1: capguard report names signal 9 (SIGKILL), from the ended record capguard run wrote")
    h = os.path.join(tmp, "run1.html")
    rh = subprocess.run([cli, "report", "--html", h, log], env=env, capture_output=True, text=True, timeout=60)
    page = open(h).read() if os.path.exists(h) else ""
    check(rh.returncode == 1 and "Ended without an exit record" in page and "killed by signal 9 (SIGKILL)" in page,
          "run 1: report --html exits 1 and its page lists the killed engine with its signal")
    p, log, events = run("run2")
    check(any(e.get("event") == "module-load" and e.get("verdict") == "served"
              and "_capguard_killed_kernel" in e.get("image", {}).get("kernels", []) for e in events),
          "run 2: the kernel's load is served from the file")
    print(f"killed_engine: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
