"""One rank of the hang cases (tests/gpu/run_hang_cases.py starts two with
torchrun, under `capguard run`). CG_HANG_CASE picks what it does:
  skip      both capture an NCCL all_reduce in a graph and replay it,
            synchronizing after each replay; rank 1 skips its 4th replay
            (sleeps CG_HANG_HOLD_S, then leaves without it), so rank 0's 4th
            replay waits on the GPU for a peer that never comes: rank 1 is
            the rank behind. The driver script kills what is left.
  busy      rank 0 replays a graph of its own long kernel (torch.cuda._sleep,
            about CG_HANG_HOLD_S seconds, no collective); rank 1 waits for it
            at a barrier: rank 0 is busy, not waiting for a peer.
  teardown  both capture and replay the all_reduce graph, then call
            destroy_process_group with the graph alive (no reset): NCCL
            waits for the graph to go. With CG_HANG_FIX=1, the graph is
            reset first (docs/hangs.md's order) and the teardown finishes.
  healthy   a tensor-parallel step (a bf16 matmul and an all_reduce) captured
            once and replayed CG_HANG_REPLAYS times; prints the replays a
            second.
Prints `RESULT rank=R case=C ...` lines."""
import faulthandler
import os
import sys
import time

import torch
import torch.distributed as dist

CASE = os.environ.get("CG_HANG_CASE", "skip")
HOLD_S = float(os.environ.get("CG_HANG_HOLD_S", "10"))
REPLAYS = int(os.environ.get("CG_HANG_REPLAYS", "3000"))


def say(rank, **kv):
    print(f"RESULT rank={rank} case={CASE} " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def collective_graph(x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x)  # the collective graph every rank replays
    return g


def skip(rank):
    x = torch.ones(1024, device="cuda")
    g = collective_graph(x)
    dist.barrier()
    torch.cuda.synchronize()
    for i in range(6):
        if rank == 1 and i == 3:
            time.sleep(HOLD_S)  # the rank that skips: its peer's 4th replay waits for it
            say(rank, skipped_at=i + 1)
            os._exit(0)  # leaves without the replay (and without a teardown that would wait)
        g.replay()
        torch.cuda.synchronize()  # rank 0 waits here in its 4th replay
    say(rank, replays=6)


def busy(rank):
    cycles = int(HOLD_S * 1.98e9)  # an H200's boost clock: at a lower clock, longer
    if rank == 0:
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(1000)  # warm the kernel outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            torch.cuda._sleep(cycles)  # the long kernel of its own: no collective
        g.replay()
        torch.cuda.synchronize()  # rank 0 waits on its own kernel
        g.reset()
    dist.barrier()  # rank 1 waits here for rank 0
    torch.cuda.synchronize()
    say(rank, ok=1)


def teardown(rank):
    x = torch.ones(1024, device="cuda")
    g = collective_graph(x)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    if os.environ.get("CG_HANG_FIX") == "1":
        g.reset()  # the fix: the graphs go before the communicator
        torch.cuda.synchronize()
    say(rank, destroying=1)
    t0 = time.monotonic()
    dist.destroy_process_group()  # waits for the graph to go, without the fix
    say(rank, destroyed=1, took_s="%.1f" % (time.monotonic() - t0))


def healthy(rank):
    torch.manual_seed(rank)
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            torch.matmul(a, w, out=out)
            dist.all_reduce(out)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        torch.matmul(a, w, out=out)  # the layer's own part
        dist.all_reduce(out)  # and the tensor-parallel sum
    for _ in range(50):
        g.replay()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(REPLAYS):
        g.replay()
        if i % 100 == 99:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    took = time.perf_counter() - t0
    say(rank, replays=REPLAYS, per_s="%.1f" % (REPLAYS / took))
    g.reset()
    torch.cuda.synchronize()


def main():
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    faulthandler.dump_traceback_later(120, exit=True)  # bounded whatever happens
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    x = torch.ones(16, device="cuda")
    dist.all_reduce(x)  # the communicator warmed outside any capture
    torch.cuda.synchronize()
    {"skip": skip, "busy": busy, "teardown": teardown, "healthy": healthy}[CASE](rank)
    if CASE in ("busy", "healthy"):
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
