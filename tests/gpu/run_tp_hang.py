#!/usr/bin/env python3
"""The hang watch on two GPUs: `capguard run` with CAPGUARD_HANG_S=2 starts
two ranks (tests/gpu/tp_hang_rank.py) through torchrun; each captures an NCCL
all_reduce in a graph, and rank 1 sleeps 8 s before its replay. Rank 0's
synchronize after its replay then waits for rank 1, and capguard says so on
rank 0's stderr: "rank 0 (pid P) waits in cuStreamSynchronize for 2.x s
(thread ..., stream 0x..., called from ...); the latest graph captured here is
capture 1's, captured at tp_hang_rank.py:LINE in main (...)". Checks:
  1. rank 0 says it waits, once, naming the synchronize, its thread, stream,
     and the graph's capture site in tp_hang_rank.py;
  2. both ranks finish right (RESULT ok=1) and the whole run ends within 60 s;
  3. `capguard report` of the log shows the two ranks' table.
Prints PASS/FAIL lines and `N passed, N failed`; exits 77 with the reason
without two GPUs."""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_here  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RANK = os.path.join(HERE, "tp_hang_rank.py")
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
LIMIT_S = 60


def skip_reason():
    return gpu_here.skip_reason(triton=False, gpus=2, nccl=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        return 77
    cli = os.path.abspath(os.path.join(args.build, "tools", "capguard"))
    tmp = tempfile.mkdtemp(prefix="capguard-hang-")
    log = os.path.join(tmp, "hang.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env.update(NO_MULTICAST, PYTHONUNBUFFERED="1", CAPGUARD_HANG_S="2")
    argv = [cli, "run", "--log", log, "--", sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node=2", RANK]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        print(f"HUNG: the demo did not end within {LIMIT_S} s; killed")
    took = time.monotonic() - t0
    print(out + err)
    passed = failed = 0

    def check(cond, what):
        nonlocal passed, failed
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        passed += bool(cond)
        failed += not cond

    waits = [l for l in err.splitlines() if "waits in" in l and l.startswith("capguard: rank 0 ")]
    check(len(waits) == 1, f"rank 0 said once that it waits ({len(waits)} lines)")
    w = waits[0] if waits else ""
    check("Synchronize for" in w and "stream 0x" in w and "thread " in w,
          "the wait names the synchronize, the thread and the stream")
    check(re.search(r"captured at \S*tp_hang_rank\.py:\d+ in main", w) is not None,
          "the wait names where the replayed graph was captured")
    check(not any(l.startswith("capguard: rank 1 ") and "waits in" in l for l in err.splitlines()),
          "rank 1 (the late one) did not wait long")
    check(out.count("ok=1") == 2, "both ranks replayed right")
    check(took < LIMIT_S, f"the demo ended in {took:.0f} s (within {LIMIT_S})")
    rep = subprocess.run([cli, "report", log], capture_output=True, text=True)
    print(rep.stdout)
    check("Ranks (2 of a world of 2)" in rep.stdout, "capguard report shows the two ranks' table")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
