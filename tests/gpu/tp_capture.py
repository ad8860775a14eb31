"""One rank of a tensor-parallel step captured in a CUDA graph.

Started by torchrun, one process per GPU (tests/gpu/run_tp.py does that).
Each rank:
  - joins an NCCL process group and warms the communicator with one eager
    all_reduce (as engines do before capture: the communicator's own set-up
    allocates and may not happen in a capture);
  - captures, inside torch.cuda.graph, an all_reduce of x followed by a Triton
    kernel that is first compiled and loaded in that capture, while
    ProcessGroupNCCL's watchdog thread runs (it queries the collectives'
    events from its own thread);
  - replays the graph REPLAYS times with fresh inputs and checks the sum.
Prints `RESULT rank=R world=W captured=ok|failed replays_ok=N/M` and exits 0
when the capture and every replay were right, 1 when the capture failed, 2 on
wrong numbers."""
import os
import sys

import torch
import torch.distributed as dist
import triton
import triton.language as tl

REPLAYS = 5
N = 4096


@triton.jit
def _cg_tp_bias_kernel(x_ptr, n, BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + BIAS, mask=mask)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    x = torch.full((N,), float(rank + 1), device="cuda")
    dist.all_reduce(x)  # warm the communicator outside any capture
    torch.cuda.synchronize()

    g = torch.cuda.CUDAGraph()
    ok = True
    try:
        with torch.cuda.graph(g):
            dist.all_reduce(x)
            _cg_tp_bias_kernel[(triton.cdiv(N, 256),)](x, N, BIAS=0.5, BLOCK=256)  # first use: compiled and loaded here
    except Exception as e:  # noqa: BLE001 - an engine dies here; say what broke
        print(f"CAPTURE rank={rank} failed: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
        ok = False
    if not ok:
        print(f"RESULT rank={rank} world={world} captured=failed replays_ok=0/{REPLAYS}", flush=True)
        return 1
    right = 0
    want = sum(range(1, world + 1))
    for i in range(REPLAYS):
        x.fill_(float(rank + 1 + i))
        g.replay()
        torch.cuda.synchronize()
        # every rank contributed rank+1+i: the sum is want + world*i, then +0.5
        if torch.allclose(x, torch.full_like(x, want + world * i + 0.5)):
            right += 1
    print(f"RESULT rank={rank} world={world} captured=ok replays_ok={right}/{REPLAYS}", flush=True)
    dist.destroy_process_group()
    return 0 if right == REPLAYS else 2


if __name__ == "__main__":
    sys.exit(main())
