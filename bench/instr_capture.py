"""The Python side of bench/instr_budget.py's Python capture scenarios: N
captures (begin and end) made as torch makes them, from a Python function
DEPTH frames deep, through ctypes, a library of 100,000 exported symbols
(bench/capture/gen_wide.py: cg_bench_begin, cg_bench_end) and a libcudart
stand-in, over whatever libcuda.so.1 the loader finds (the fake driver).
instr_budget.py counts only what runs inside the stand-in's
cg_bench_cudart_begin and cg_bench_cudart_end (callgrind's --toggle-collect;
it cannot name the wide library's functions among its 100,000 symbols
without sizes), so the interpreter's own work, the same with and without
capguard, is left out.
Usage: instr_capture.py WIDE_LIBRARY N DEPTH"""
import ctypes
import sys


def main():
    wide_path, n, depth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cu = ctypes.CDLL("libcuda.so.1")
    wide = ctypes.CDLL(wide_path)
    P = ctypes.c_void_p
    dev, ctx, s, g = ctypes.c_int(), P(), P(), P()
    if cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0) or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) \
            or cu.cuCtxSetCurrent(ctx) or cu.cuStreamCreate(ctypes.byref(s), 1):
        sys.exit("instr_capture: driver set-up failed")
    # Through dlsym, as ctypes finds them: capguard's wrappers when preloaded.
    begin_fn = ctypes.cast(cu.cuStreamBeginCapture_v2, P)
    end_fn = ctypes.cast(cu.cuStreamEndCapture, P)
    begin, end = wide.cg_bench_begin, wide.cg_bench_end
    begin.argtypes = [P, P, ctypes.c_int]
    end.argtypes = [P, P, ctypes.POINTER(P)]
    gref = ctypes.byref(g)
    destroy = cu.cuGraphDestroy

    def captures(k):
        for _ in range(k):
            if begin(begin_fn, s, 0) or end(end_fn, s, gref):
                sys.exit("instr_capture: a capture failed")
            destroy(g)

    def deeper(d, k):
        return deeper(d - 1, k) if d > 0 else captures(k)

    deeper(depth, 2)  # warm-up: the first begin preloads, the first site is unwound
    deeper(depth, n)


if __name__ == "__main__":
    main()
