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
     every rank's teardown (graphs destroyed, device synchronized, then
     destroy_process_group) returned: NCCL's destroy waits for every graph
     captured with the communicator, so a graph left alive hangs the exit;
  4. `capguard report` of the shared log names every rank's process, and its
     table of ranks (printed here) has one row per rank.

Each step is bounded (--step-s, default 90 s; the whole run stays within
300 s): past it the step's process group (torchrun and its ranks) is killed,
and the ranks that had not printed their RESULT or TEARDOWN line are named
as hung, with the last lines they wrote. Each rank also bounds itself
(CG_TP_STEP_S, a little less than the step) and prints its Python stacks when
it passes it.

--world N sets the number of ranks (default 2: one per GPU). With fewer GPUs
than ranks it exits 77 with the reason. `--world 1` runs the same checks on
one GPU (one rank: the collective still runs through NCCL and its watchdog).
Prints PASS/FAIL lines and `N passed, N failed`."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_here  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RANK_SCRIPT = os.path.join(HERE, "tp_capture.py")
KERNEL = "_cg_tp_bias_kernel"
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def skip_reason(world):
    return gpu_here.skip_reason(gpus=world, nccl=True)


class Runner:
    def __init__(self, build, out, world, step_s):
        self.cli = os.path.abspath(os.path.join(build, "tools", "capguard"))
        self.out, self.world, self.step_s = out, world, step_s
        self.tmp = tempfile.mkdtemp(prefix="capguard-tp-")
        self.passed = self.failed = 0

    def check(self, cond, what):
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        self.passed += bool(cond)
        self.failed += not cond

    def capguard(self, name, argv):
        """Runs one step in its own process group, bounded to step_s: past it
        the group is killed and the ranks that did not finish are named."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
        env.update(NO_MULTICAST, PYTHONUNBUFFERED="1", CG_TP_STEP_S=str(max(10, self.step_s - 15)),
                   TRITON_CACHE_DIR=os.path.join(self.tmp, name + ".triton"))
        t0 = time.monotonic()
        proc = subprocess.Popen([self.cli] + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        hung = False
        out = err = ""
        try:
            out, err = proc.communicate(timeout=self.step_s)
        except subprocess.TimeoutExpired:
            hung = True
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    out, err = proc.communicate(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
        p = subprocess.CompletedProcess(proc.args, proc.returncode, out or "", err or "")
        with open(os.path.join(self.out, "tp_" + name + ".txt"), "w") as f:
            f.write("$ capguard " + " ".join(argv) + "\n" + p.stdout + p.stderr)
        results = [l for l in p.stdout.splitlines() if l.startswith("RESULT")]
        teardowns = [l for l in p.stdout.splitlines() if l.startswith("TEARDOWN")]
        print(f"--- {name}: exit {p.returncode} in {time.monotonic() - t0:.0f} s; "
              + ("; ".join(results + teardowns) or "no RESULT line"), flush=True)
        if hung:
            done = {int(l.split("rank=")[1].split()[0]) for l in teardowns if " ok " in l}
            stuck = [r for r in range(self.world) if r not in done]
            print(f"HUNG {name}: killed after {self.step_s} s; rank(s) {stuck} had not finished their teardown",
                  flush=True)
            for line in (p.stdout + p.stderr).splitlines()[-15:]:
                print("    " + line, flush=True)
        p.hung = hung
        p.teardowns = teardowns
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


def rank_table(report):
    """The report's ranks section: its heading line and the lines under it up
    to the next blank line."""
    lines = report.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("Ranks"):
            end = next((j for j in range(i + 1, len(lines)) if not lines[j].strip()), len(lines))
            return [x.strip() for x in lines[i:end]]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=tempfile.gettempdir())
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--step-s", type=int, default=90, help="the limit of each torchrun step")
    args = ap.parse_args()
    t_start = time.monotonic()
    reason = skip_reason(args.world)
    if reason:
        print(f"SKIP: {reason}")
        return 77
    os.makedirs(args.out, exist_ok=True)
    r = Runner(args.build, args.out, args.world, args.step_s)
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
    r.check(not p.hung and sum(" ok " in l for l in p.teardowns) == w,
            f"run 2: every rank's teardown returned (graphs destroyed before destroy_process_group)")
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
    table = rank_table(rep.stdout)
    print("capguard report's table of ranks:\n" + "\n".join("    " + l for l in table), flush=True)
    if w >= 2:  # one rank has no table
        r.check(all(any(l.split()[:1] == [str(k)] for l in table) for k in range(w)),
                f"capguard report's table of ranks has a row for each of the {w} ranks")
    took = time.monotonic() - t_start
    r.check(took <= 300, f"the whole run took {took:.0f} s (at most 300)")
    shutil.rmtree(r.tmp, ignore_errors=True)
    print(f"{r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
