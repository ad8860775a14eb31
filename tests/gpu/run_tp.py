#!/usr/bin/env python3
"""Tensor-parallel capture under capguard: torchrun starts one
process per GPU (tests/gpu/tp_capture.py); each rank captures an NCCL
all_reduce plus a Triton kernel first used in the capture, with
ProcessGroupNCCL's watchdog running. NVLink multicast stays off.

  1. report mode, emulated 12.2 (`capguard run --mode report --emulate-driver
     12020`): the capture breaks on every rank (the kernel's load is refused);
  2. guard mode, emulated 12.2, run 1: the capture breaks, and the kernel is
     recorded in ONE priming file shared by the ranks (each rank's process
     recorded it or found it recorded);
  3. guard mode, emulated 12.2, run 2 with that file: every rank captures and
     every replay's all_reduce sum is right; every load during capture was
     served; no capture broke; no watchdog query during capture was refused;
  4. `capguard report` of the shared log names every rank's process.

--world N sets the number of ranks (default 2: one per GPU). With fewer GPUs
than ranks it exits 77 with the reason. `--world 1` runs the same checks on
one GPU (one rank: the collective still runs through NCCL and its watchdog).
Prints PASS/FAIL lines and `N passed, N failed`."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RANK_SCRIPT = os.path.join(HERE, "tp_capture.py")
KERNEL = "_cg_tp_bias_kernel"
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def skip_reason(world):
    try:
        import torch
        import triton  # noqa: F401
        import torch.distributed as dist
    except ImportError as e:
        return f"no torch/triton here ({e})"
    if not torch.cuda.is_available():
        return "no CUDA GPU here (torch.cuda.is_available() is False)"
    if not dist.is_nccl_available():
        return "this torch has no NCCL"
    if torch.cuda.device_count() < world:
        return f"{world} ranks need {world} GPUs, this machine has {torch.cuda.device_count()}"
    return None


class Runner:
    def __init__(self, build, out, world):
        self.cli = os.path.abspath(os.path.join(build, "tools", "capguard"))
        self.out, self.world = out, world
        self.tmp = tempfile.mkdtemp(prefix="capguard-tp-")
        self.passed = self.failed = 0

    def check(self, cond, what):
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        self.passed += bool(cond)
        self.failed += not cond

    def capguard(self, name, argv, timeout=600):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
        env.update(NO_MULTICAST, PYTHONUNBUFFERED="1",
                   TRITON_CACHE_DIR=os.path.join(self.tmp, name + ".triton"))
        p = subprocess.run([self.cli] + argv, env=env, capture_output=True, text=True, timeout=timeout)
        with open(os.path.join(self.out, "tp_" + name + ".txt"), "w") as f:
            f.write("$ capguard " + " ".join(argv) + "\n" + p.stdout + p.stderr)
        results = [l for l in p.stdout.splitlines() if l.startswith("RESULT")]
        print(f"--- {name}: exit {p.returncode}; " + ("; ".join(results) or "no RESULT line"), flush=True)
        return p, results

    def torchrun(self):
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc-per-node={self.world}", RANK_SCRIPT]


def records(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(l) for l in f if l.strip()]


def rank_pids(recs):
    """The pids of the processes that ran a rank: those that began a capture."""
    return {r["pid"] for r in recs if r.get("type") == "capture"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=tempfile.gettempdir())
    ap.add_argument("--world", type=int, default=2)
    args = ap.parse_args()
    reason = skip_reason(args.world)
    if reason:
        print(f"SKIP: {reason}")
        return 77
    os.makedirs(args.out, exist_ok=True)
    r = Runner(args.build, args.out, args.world)
    w = args.world

    # 1. report mode under the emulated 12.2 driver: nothing primes, the load breaks the capture
    log = os.path.join(r.tmp, "report.jsonl")
    p, res = r.capguard("report", ["run", "--mode", "report", "--emulate-driver", "12020", "--log", log,
                                   "--prime", os.path.join(r.tmp, "unused.cgp"), "--"] + r.torchrun())
    r.check(p.returncode != 0 and sum("captured=failed" in l for l in res) == w,
            f"report mode, emulated 12.2: the capture breaks on all {w} ranks")
    ev = [e for e in records(log) if e.get("type") == "event" and KERNEL in e.get("image", {}).get("kernels", [])]
    r.check(len({e["pid"] for e in ev}) == w, f"report mode: the refused load of {KERNEL} is named in every rank")

    # 2. guard mode, run 1: breaks, and records into one shared file
    prime = os.path.join(r.tmp, "tp.cgp")
    log1 = os.path.join(r.tmp, "guard1.jsonl")
    p, res = r.capguard("guard1", ["run", "--emulate-driver", "12020", "--prime", prime, "--log", log1, "--"]
                        + r.torchrun())
    r.check(sum("captured=failed" in l for l in res) == w, "guard mode run 1 (fresh file): the capture breaks")
    lst = subprocess.run([r.cli, "prime", "list", prime], capture_output=True, text=True)
    r.check(KERNEL in lst.stdout, f"run 1 recorded {KERNEL} in the one priming file")
    ev = [e for e in records(log1) if e.get("type") == "event" and KERNEL in e.get("image", {}).get("kernels", [])]
    r.check(len({e["pid"] for e in ev}) == w, "run 1: every rank's load was seen")

    # 3. guard mode, run 2: every rank captures and replays right
    log2 = os.path.join(r.tmp, "guard2.jsonl")
    p, res = r.capguard("guard2", ["run", "--emulate-driver", "12020", "--prime", prime, "--log", log2, "--"]
                        + r.torchrun())
    r.check(p.returncode == 0 and sum("captured=ok" in l and "replays_ok=5/5" in l for l in res) == w,
            f"guard mode run 2: all {w} ranks captured, every all_reduce replay right")
    recs = records(log2)
    caps = [c for c in recs if c.get("type") == "capture"]
    r.check(caps and all(c.get("status") == "ended" for c in caps),
            f"run 2: no capture broken ({len(caps)} capture records, all ended)")
    mine = [e for e in recs if e.get("type") == "event" and KERNEL in e.get("image", {}).get("kernels", [])]
    r.check(mine and all(e["verdict"] == "served" for e in mine) and len({e["pid"] for e in mine}) == w,
            f"run 2: every rank's load of {KERNEL} during capture was served ({len(mine)} loads)")
    queries = [e for e in recs if e.get("type") == "event" and e.get("call", "").startswith(("cuEventQuery", "cuStreamQuery"))]
    r.check(all(e["verdict"] in ("not-ready", "allowed") for e in queries),
            f"run 2: no watchdog query during capture was refused ({len(queries)} query events)")

    # 4. the report lists every rank
    rep = subprocess.run([r.cli, "report", log2], capture_output=True, text=True)
    with open(os.path.join(args.out, "tp_report.txt"), "w") as f:
        f.write(rep.stdout + rep.stderr)
    pids = rank_pids(recs)
    r.check(len(pids) == w and all(str(pid) in rep.stdout for pid in pids),
            f"capguard report names every rank's process ({sorted(pids)})")
    shutil.rmtree(r.tmp, ignore_errors=True)
    print(f"{r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
