"""An engine that serves, for the request-path test: a warm-up, graphs
captured for two batch sizes (a Triton kernel in each), then serving:
replays for longer than capguard's quiet window; then a request that meets
a new specialisation of the Triton kernel (its first compile and load) and a
torch op first used there (torch.cumsum: the CUDA runtime loads its kernel
lazily), then more replays. Prints START_S (process start to serving), the
request's own wall time (REQUEST_MS) and RESULT ok when every replay and the
request's numbers are right."""
import sys
import time

T0 = time.monotonic()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit(do_not_specialize=["n"])
def _cg_request_scale(x_ptr, n, BLOCK: tl.constexpr, SPEC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def scale(x, spec):
    _cg_request_scale[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128, SPEC=spec)


def main():
    graphs = []
    for size in (256, 128):
        x = torch.ones(size, device="cuda")
        scale(x, 1)  # warm-up: the kernel compiled and loaded before capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            scale(x, 1)
        graphs.append((x, g))
    start_s = time.monotonic() - T0
    end = time.monotonic() + 2.6  # serving: longer than the quiet window
    while time.monotonic() < end:
        for x, g in graphs:
            g.replay()
        torch.cuda.synchronize()
        time.sleep(0.01)
    t = time.monotonic()
    y = torch.arange(64, device="cuda", dtype=torch.float32)
    scale(y, 7)  # request: a new specialisation
    z = torch.cumsum(y, 0)  # request: a torch op first used here
    torch.cuda.synchronize()
    request_ms = (time.monotonic() - t) * 1e3
    for x, g in graphs:
        g.replay()
    torch.cuda.synchronize()
    ok = torch.equal(z, torch.cumsum(torch.arange(64, device="cuda", dtype=torch.float32) * 2.0, 0))
    print(f"START_S {start_s:.3f}\nREQUEST_MS {request_ms:.2f}\nRESULT {'ok' if ok else 'WRONG'}", flush=True)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
