"""One rank of the hang demo (tests/gpu/run_tp_hang.py starts two with
torchrun): each captures an NCCL all_reduce in a CUDA graph and replays it;
rank 1 sleeps HANG_SLEEP_S seconds before its replay, so rank 0's replay
waits on the GPU for its peer and rank 0's synchronize blocks meanwhile,
which capguard's hang watch (CAPGUARD_HANG_S) says. Then both finish, check
the sum, and tear down in the order NCCL needs (graph reset, synchronize,
destroy_process_group). Prints `RESULT rank=R ok=1|0`."""
import faulthandler
import os
import sys
import time

import torch
import torch.distributed as dist

HANG_SLEEP_S = float(os.environ.get("CG_HANG_SLEEP_S", "8"))


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    faulthandler.dump_traceback_later(50, exit=True)  # the demo is bounded whatever happens
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    x = torch.ones(1024, device="cuda")
    dist.all_reduce(x)  # the communicator warmed outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x)  # the step every rank must replay
    dist.barrier()
    if rank == 1:
        time.sleep(HANG_SLEEP_S)  # the late rank: its peer's replay waits for it
    x.fill_(float(rank + 1))
    g.replay()
    torch.cuda.current_stream().synchronize()  # rank 0 waits here while rank 1 sleeps
    ok = torch.allclose(x, torch.full_like(x, float(sum(range(1, world + 1)))))
    print(f"RESULT rank={rank} ok={int(ok)}", flush=True)
    g.reset()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
