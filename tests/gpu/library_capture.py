"""CUlibrary loads inside torch.cuda.graph capture, the way CuTeDSL, CCCL and
DeepGEMM load kernels: the same cubin (tests/data/kernels_sm90.cubin) is loaded
twice with cuLibraryLoadData during the capture (two loads of identical bytes,
two CUlibrary handles); from the first, cg_test_fill is taken with
cuLibraryGetKernel + cuKernelGetFunction; from the second, cg_test_axpy with
cuLibraryGetModule + cuModuleGetFunction; both are launched into the capture.
Then the graph is replayed and its numbers checked.
Prints one RESULT line; exit 0 when captured and right, 1 when the capture
failed, 2 on wrong numbers."""
import ctypes
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CUBIN = os.path.join(HERE, "..", "data", "kernels_sm90.cubin")

cu = ctypes.CDLL("libcuda.so.1")  # symbols through dlsym: the route CuPy and ctypes users take
P = ctypes.c_void_p


def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what} returned CUresult {r}")


def launch(fn, stream, *args):
    params = (P * len(args))(*[ctypes.cast(ctypes.pointer(a), P) for a in args])
    n = 4096
    check(cu.cuLaunchKernel(fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, P(stream), params, None), "cuLaunchKernel")


def main():
    if torch.cuda.get_device_capability() != (9, 0):
        print("RESULT skipped: the test cubin is for sm_90")
        return 0
    with open(CUBIN, "rb") as f:
        image = f.read()
    n = 4096
    x = torch.arange(n, device="cuda", dtype=torch.float32)
    y = torch.zeros(n, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            stream = torch.cuda.current_stream().cuda_stream
            lib1, lib2, kern, mod = P(), P(), P(), P()
            fill, axpy = P(), P()
            check(cu.cuLibraryLoadData(ctypes.byref(lib1), image, None, None, 0, None, None, 0), "cuLibraryLoadData 1")
            check(cu.cuLibraryGetKernel(ctypes.byref(kern), lib1, b"cg_test_fill"), "cuLibraryGetKernel")
            check(cu.cuKernelGetFunction(ctypes.byref(fill), kern), "cuKernelGetFunction")
            check(cu.cuLibraryLoadData(ctypes.byref(lib2), image, None, None, 0, None, None, 0), "cuLibraryLoadData 2")
            if lib1.value == lib2.value:
                raise RuntimeError("two loads of the same bytes returned one CUlibrary")
            check(cu.cuLibraryGetModule(ctypes.byref(mod), lib2), "cuLibraryGetModule")
            check(cu.cuModuleGetFunction(ctypes.byref(axpy), mod, b"cg_test_axpy"), "cuModuleGetFunction")
            launch(fill, stream, ctypes.c_uint64(y.data_ptr()), ctypes.c_float(7.0), ctypes.c_int(n))
            launch(axpy, stream, ctypes.c_float(2.0), ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(y.data_ptr()),
                   ctypes.c_int(n))
    except Exception as e:  # noqa: BLE001 - say what broke
        print(f"RESULT library capture=failed error={type(e).__name__}: {str(e).splitlines()[0]}")
        return 1
    y.zero_()
    g.replay()
    torch.cuda.synchronize()
    ok = torch.equal(y, (x * 2.0 + 1.0) + 7.0)
    print(f"RESULT library capture=ok replay={'correct' if ok else 'WRONG'}")
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
