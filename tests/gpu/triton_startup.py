"""A multi-size engine start-up with Triton and torch.cuda.graph, the shape that
priming must converge on:
  - warm-up: one kernel run at one batch size before any capture;
  - ten graphs captured, one per batch size, largest first;
  - a kernel that only the captured path uses (first compiled and loaded in
    the third capture);
  - specialisations compiled during capture: the block size changes below
    1024, and an unused constexpr TAG changes below 256, which makes Triton
    compile (and load) a second kernel from identical code: the same image
    bytes loaded twice in one process, each load its own module;
  - every graph replayed afterwards and its numbers checked.
Prints one RESULT line and, per capture, CAPTURE lines. Exit 0 when every
size captured and every replay is right, 1 when a capture failed, 2 on wrong
numbers."""
import sys

import torch
import triton
import triton.language as tl

SIZES = [4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8]


@triton.jit
def _cg_startup_scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def _cg_startup_captured_only(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 3.0, mask=mask)


@triton.jit
def _cg_startup_spec(x_ptr, n, BLOCK: tl.constexpr, TAG: tl.constexpr):
    # TAG is not used: its two values compile to the same code.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) - 1.0, mask=mask)


def step(x, size):
    """The captured forward pass for one batch size."""
    grid = (triton.cdiv(size, 64),)
    _cg_startup_scale[grid](x, size, BLOCK=64)
    if size <= 1024:
        _cg_startup_captured_only[grid](x, size, BLOCK=64)
    block = 256 if size >= 1024 else 64
    _cg_startup_spec[(triton.cdiv(size, block),)](x, size, BLOCK=block, TAG=0 if size >= 256 else 1)


def expected(size):
    x = torch.arange(size, device="cuda", dtype=torch.float32) * 2.0
    if size <= 1024:
        x = x + 3.0
    return x - 1.0


def main():
    warm = torch.zeros(SIZES[0], device="cuda")
    _cg_startup_scale[(triton.cdiv(SIZES[0], 64),)](warm, SIZES[0], BLOCK=64)
    torch.cuda.synchronize()
    graphs = []
    for i, size in enumerate(SIZES):
        x = torch.arange(size, device="cuda", dtype=torch.float32)
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g):
                step(x, size)
        except Exception as e:  # noqa: BLE001 - an engine dies here; say what broke
            print(f"CAPTURE size={size} failed: {type(e).__name__}: {str(e).splitlines()[0]}")
            print(f"RESULT captured={i}/{len(SIZES)} capture=failed")
            return 1
        print(f"CAPTURE size={size} ok")
        graphs.append((size, x, g))
    wrong = []
    for size, x, g in graphs:
        x.copy_(torch.arange(size, device="cuda", dtype=torch.float32))
        g.replay()
        torch.cuda.synchronize()
        if not torch.equal(x, expected(size)):
            wrong.append(size)
    print(f"RESULT captured={len(graphs)}/{len(SIZES)} replay={'correct' if not wrong else 'WRONG ' + str(wrong)}")
    return 0 if not wrong else 2


if __name__ == "__main__":
    sys.exit(main())
