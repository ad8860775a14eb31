"""The seed's engine in miniature: per batch size, a warm-up, then a FULL
graph capture whose body is the first launch of
  - a Triton kernel specialised for that size (an unused constexpr SPEC:
    Triton compiles and loads one module per size, from identical code, so
    the same bytes are loaded once per size, as vLLM's conv kernel's
    specialisations are), and
  - torch.cat, whose kernel the CUDA runtime loads lazily (cuLibraryLoadData
    with CU_LIBRARY_BINARY_IS_PRESERVED) at its first launch, inside the
    first capture.
Each graph is replayed and checked. Prints a CAPTURE line per size and one
RESULT line; exit 0 when every size captured and replayed right, 1 when a
capture failed (an engine dies there), 2 on wrong numbers.

Usage: python3 mission_engine.py SIZE,SIZE,..."""
import sys

import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["n"])
def _cg_mission_scale(x_ptr, n, BLOCK: tl.constexpr, SPEC: tl.constexpr):
    # SPEC is not used: every size compiles to the same code.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def body(x, y, size):
    _cg_mission_scale[(triton.cdiv(size, 128),)](x, size, BLOCK=128, SPEC=size)
    return torch.cat([x, y])


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")]
    graphs = []
    for i, size in enumerate(sizes):
        x = torch.arange(size, device="cuda", dtype=torch.float32)
        y = torch.ones(size, device="cuda")
        x.add_(0.0)  # warm-up: the size's tensors used once, eagerly
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g):
                out = body(x, y, size)
        except Exception as e:  # noqa: BLE001 - an engine dies here; say what broke
            print(f"CAPTURE size={size} failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
            print(f"RESULT captured={i}/{len(sizes)} capture=failed", flush=True)
            return 1
        print(f"CAPTURE size={size} ok", flush=True)
        graphs.append((size, x, y, out, g))
    wrong = []
    for size, x, y, out, g in graphs:
        x.copy_(torch.arange(size, device="cuda", dtype=torch.float32))
        g.replay()
        torch.cuda.synchronize()
        want = torch.cat([torch.arange(size, device="cuda", dtype=torch.float32) * 2.0, y])
        if not torch.equal(out, want):
            wrong.append(size)
    print(f"RESULT captured={len(graphs)}/{len(sizes)} replay={'correct' if not wrong else 'WRONG ' + str(wrong)}",
          flush=True)
    return 0 if not wrong else 2


if __name__ == "__main__":
    sys.exit(main())
