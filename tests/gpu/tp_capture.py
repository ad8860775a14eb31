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
  - replays the graph REPLAYS times with fresh inputs and checks the sum;
  - tears down in the order NCCL needs: every graph and graph exec that holds
    the communicator's work is destroyed and the device synchronized BEFORE
    destroy_process_group. NCCL 2.26 and later make the communicator's destroy
    wait until every graph captured with it has been destroyed (each captured
    collective keeps a reference the graph's user object releases); a graph
    still alive at destroy_process_group waits forever: the hang at exit.
Prints `RESULT rank=R world=W captured=ok|failed replays_ok=N/M`, then
`TEARDOWN rank=R ok in S s` or `TEARDOWN rank=R hung: ...` (the process then
exits 3 at once, so the step never waits on it), and exits 0 when the capture
and every replay were right, 1 when the capture failed, 2 on wrong numbers.
CG_TP_STEP_S (default 75) bounds the whole rank: past it, faulthandler prints
every thread's Python stack, naming the rank first, and the process exits."""
import faulthandler
import gc
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import triton
import triton.language as tl

REPLAYS = 5
N = 4096
TEARDOWN_S = 30


@triton.jit
def _cg_tp_bias_kernel(x_ptr, n, BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + BIAS, mask=mask)


def teardown(rank, graph):
    """Destroy the graph (its exec too) and let the device finish, then the
    process group, within TEARDOWN_S; a destroy that hangs is said, naming the
    rank, and the process leaves at once (os._exit: no atexit hook may wait on
    the communicator again)."""
    t0 = time.monotonic()
    try:
        if graph is not None:
            graph.reset()  # cudaGraphExecDestroy + cudaGraphDestroy: the user objects NCCL waits for go
        del graph
        gc.collect()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - a failed capture may leave less to free; say it and go on
        print(f"TEARDOWN rank={rank} note: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
    done = threading.Event()
    failed = []

    def destroy():
        try:
            dist.destroy_process_group()
        except Exception as e:  # noqa: BLE001 - said below, not taken for a hang
            failed.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        finally:
            done.set()

    threading.Thread(target=destroy, name="cg-tp-destroy", daemon=True).start()
    if not done.wait(TEARDOWN_S):
        print(f"TEARDOWN rank={rank} hung: destroy_process_group did not return in {TEARDOWN_S} s", flush=True)
        faulthandler.dump_traceback(all_threads=True)
        os._exit(3)
    if failed:
        print(f"TEARDOWN rank={rank} failed: destroy_process_group raised {failed[0]}", flush=True)
        return
    print(f"TEARDOWN rank={rank} ok in {time.monotonic() - t0:.1f} s", flush=True)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    step_s = int(os.environ.get("CG_TP_STEP_S", "75"))
    sys.stderr.write(f"rank {rank}: pid {os.getpid()}, bounded to {step_s} s\n")
    faulthandler.dump_traceback_later(step_s, exit=True)  # a hang anywhere says where, then ends the rank
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
        teardown(rank, g)
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
    teardown(rank, g)
    return 0 if right == REPLAYS else 2


if __name__ == "__main__":
    sys.exit(main())
