"""A Triton kernel meets torch.cuda.graph capture, three ways:
  first-launch  a kernel launched for the first time inside the capture (the
                JIT loads its module mid-capture: cuModuleLoadData);
  warm          the same kernels, all launched once before the capture (control);
  unload        a warm kernel's module unloaded mid-capture, as newer Triton does
                when a CompiledKernel is garbage-collected.
Prints one RESULT line; exit 0 when the graph was captured and its replay gave
the right numbers, 1 when the capture failed, 2 on wrong numbers."""
import argparse
import ctypes
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _capguard_warm_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


@triton.jit
def _capguard_first_launch_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def _capguard_victim_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) - 1.0, mask=mask)


def unload_module(handle):
    """Unload through Triton's own driver utilities when this version has
    them, else through the driver entry point Triton would call."""
    utils = triton.runtime.driver.active.utils
    if hasattr(utils, "unload_module"):
        utils.unload_module(handle)
        return "triton.runtime.driver.active.utils.unload_module", 0
    libcuda = ctypes.CDLL("libcuda.so.1")
    r = libcuda.cuModuleUnload(ctypes.c_void_p(handle))
    return "cuModuleUnload via ctypes", r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=["first-launch", "warm", "unload"], required=True)
    args = ap.parse_args()
    n, block = 4096, 256
    grid = (triton.cdiv(n, block),)
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    scratch = torch.zeros(n, device="cuda")

    _capguard_warm_kernel[grid](scratch, n, BLOCK=block)
    if args.scenario == "warm":
        _capguard_first_launch_kernel[grid](scratch, n, BLOCK=block)
    # A kernel used before the capture and never again: the one a garbage
    # collector would unload.
    victim = _capguard_victim_kernel[grid](scratch, n, BLOCK=block) if args.scenario == "unload" else None
    torch.cuda.synchronize()

    expect = (x + 1.0) * 2.0
    g = torch.cuda.CUDAGraph()
    how = ""
    try:
        with torch.cuda.graph(g):
            _capguard_warm_kernel[grid](x, n, BLOCK=block)
            if args.scenario != "unload":
                _capguard_first_launch_kernel[grid](x, n, BLOCK=block)  # the launch a report must name
            else:
                how, r = unload_module(victim.module)
                if r:
                    raise RuntimeError(f"cuModuleUnload returned {r}")
    except Exception as e:  # noqa: BLE001 - the point is to report what broke
        print(f"RESULT scenario={args.scenario} capture=failed error={type(e).__name__}: {str(e).splitlines()[0]}")
        return 1
    if args.scenario == "unload":
        expect = x + 1.0
    x.copy_(torch.arange(n, device="cuda", dtype=torch.float32))
    g.replay()
    torch.cuda.synchronize()
    ok = torch.equal(x, expect)
    extra = f" unload={how}" if how else ""
    print(f"RESULT scenario={args.scenario} capture=ok replay={'correct' if ok else 'WRONG'}{extra}")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
