"""The third matrix in real programs (driver-semantics.md), one scenario per
run, for run_gpu.py --only escapes:
  cupy_escape       a CuPy kernel on CuPy's default stream (the legacy stream)
                    inside torch.cuda.graph (a non-blocking stream captures):
                    the driver runs it once, now, outside the graph; replays
                    do not. capguard must say it escaped, at its Python line.
  legacy_906        a capture on a blocking stream (cuStreamCreate flags 0,
                    begun with ctypes) and a torch kernel on the legacy
                    (default) stream: refused with 906, the capture broken.
  wait_905          a capture whose stream waits on an event recorded before
                    it began (torch's Stream.wait_event): 905.
  unwrapped_log     a capture on a blocking stream and cuStreamWriteValue32_v2
                    on the legacy stream, made with ctypes: a call capguard
                    does not wrap; refused with 906 and named through the
                    driver's log callback (drivers 12.9 and later). Measured on
                    the H100 (driver 580): 906, and the log says "Returning 906
                    (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) from
                    cuStreamWriteValue32_v2" on the calling thread.
  copy_906          a capture on a blocking stream and cuMemsetD8Async on the
                    legacy stream (a row since the copies and memsets were wrapped): 906, named by its
                    wrapper (legacy-stream). Measured on the H100: 906.
  pageable_htod     inside torch.cuda.graph, cuMemcpyHtoDAsync_v2 from pageable
                    host memory on the capturing stream: captured (third
                    matrix); the host memory is changed after the capture and
                    the replay's result printed (what the replay read).
  pageable_dtoh     the same for cuMemcpyDtoHAsync_v2 into pageable host
                    memory (not measured before: the call's result, the
                    capture's, and what the host memory holds after the
                    capture and after a replay are printed).
Each marked line is where the offending call is made. Prints
  ERROR <text>  for each exception seen
  RESULT scenario=S captured=1|0 key=value ...
Exits 0 whether or not the capture broke; 3 when it cannot run here."""
import ctypes
import sys

import torch

N = 1024
cuda = ctypes.CDLL("libcuda.so.1")
CU_STREAM_CAPTURE_MODE_GLOBAL = 0


def result(scenario, captured, **extra):
    tail = "".join(f" {k}={v}" for k, v in extra.items())
    print(f"RESULT scenario={scenario} captured={int(captured)}{tail}", flush=True)


def blocking_capture():
    """A blocking stream (flags 0), capturing in global mode, begun by the driver API."""
    s = ctypes.c_void_p()
    assert cuda.cuStreamCreate(ctypes.byref(s), 0) == 0
    assert cuda.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == 0
    return s


def end_capture(s):
    g = ctypes.c_void_p()
    return cuda.cuStreamEndCapture(s, ctypes.byref(g))


def cupy_escape():
    try:
        import cupy as cp
    except ImportError as e:
        print(f"INFO cupy missing: {e}")
        result("cupy_escape", 0, skipped=1)
        sys.exit(3)
    x = torch.zeros(N, device="cuda")
    a = cp.zeros(N, dtype=cp.float32)
    cp.add(a, 1, out=a)  # compiled and loaded before the capture
    torch.cuda.synchronize()
    a[...] = 0
    cp.cuda.Device().synchronize()
    g = torch.cuda.CUDAGraph()
    captured = False
    try:
        with torch.cuda.graph(g):
            x.add_(1)
            cp.add(a, 1, out=a)  # CAPGUARD-MARK escape: CuPy's default stream is the legacy stream
            x.add_(1)
        captured = True
    except Exception as e:  # noqa: BLE001
        print(f"ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    cp.cuda.Device().synchronize()
    after_capture = float(a[0])
    if captured:
        g.replay()
        g.replay()
        torch.cuda.synchronize()
    # the CuPy kernel ran once, at capture time, and never in a replay
    result("cupy_escape", captured, cupy_after_capture=after_capture, cupy_after_replays=float(a[0]),
           torch_after_replays=float(x[0].item()))


def legacy_906():
    x = torch.zeros(N, device="cuda")
    y = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    s = blocking_capture()
    ext = torch.cuda.ExternalStream(s.value)
    with torch.cuda.stream(ext):
        x.add_(1)
    try:
        y.add_(1)  # CAPGUARD-MARK 906: a kernel on the legacy (default) stream
    except Exception as e:  # noqa: BLE001
        print(f"ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    r = end_capture(s)
    result("legacy_906", r == 0, end_result=r)


def wait_905():
    x = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    s = ctypes.c_void_p()
    assert cuda.cuStreamCreate(ctypes.byref(s), 1) == 0  # non-blocking
    ext = torch.cuda.ExternalStream(s.value)
    ev = torch.cuda.Event()
    ev.record(ext)
    torch.cuda.synchronize()
    assert cuda.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == 0
    with torch.cuda.stream(ext):
        x.add_(1)
    try:
        ext.wait_event(ev)  # CAPGUARD-MARK 905: an event recorded before the capture
    except Exception as e:  # noqa: BLE001
        print(f"ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    r = end_capture(s)
    result("wait_905", r == 0, end_result=r)


def unwrapped_log():
    buf = torch.zeros(N, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    s = blocking_capture()
    args = (ctypes.c_void_p(0), ctypes.c_uint64(buf.data_ptr()), ctypes.c_uint32(7), ctypes.c_uint(0))
    rc = cuda.cuStreamWriteValue32_v2(*args)  # CAPGUARD-MARK unwrapped: not a call capguard wraps
    r = end_capture(s)
    result("unwrapped_log", r == 0, call_result=rc, end_result=r)


def copy_906():
    buf = torch.zeros(N, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    s = blocking_capture()
    args = (ctypes.c_uint64(buf.data_ptr()), ctypes.c_ubyte(7), ctypes.c_size_t(N), ctypes.c_void_p(0))
    rc = cuda.cuMemsetD8Async(*args)  # CAPGUARD-MARK copy906: an asynchronous memset on the legacy stream
    r = end_capture(s)
    result("copy_906", r == 0, call_result=rc, end_result=r)


def pageable_copy(scenario, to_device):
    """One copy between device memory and pageable host memory, captured by
    torch.cuda.graph on its (non-blocking) capture stream; then the host side
    is changed and the graph replayed once."""
    dev = torch.full((N,), 5, dtype=torch.uint8, device="cuda")
    host = (ctypes.c_ubyte * N)(*([1] * N))  # pageable: ctypes memory the driver never saw
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    rc = None
    captured = False
    try:
        with torch.cuda.graph(g):
            st = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            d, n = ctypes.c_uint64(dev.data_ptr()), ctypes.c_size_t(N)
            if to_device:
                rc = cuda.cuMemcpyHtoDAsync_v2(d, host, n, st)  # CAPGUARD-MARK pageable-htod
            else:
                rc = cuda.cuMemcpyDtoHAsync_v2(host, d, n, st)  # CAPGUARD-MARK pageable-dtoh
        captured = True
    except Exception as e:  # noqa: BLE001
        print(f"ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    torch.cuda.synchronize()
    dev_after_capture, host_after_capture = int(dev[0].item()), host[0]
    ctypes.memset(host, 2, N)  # the host side changes after the capture
    if to_device:
        dev.fill_(5)
    else:
        dev.fill_(9)
    torch.cuda.synchronize()
    if captured:
        g.replay()
        torch.cuda.synchronize()
    result(scenario, captured, call_result=rc, dev_after_capture=dev_after_capture,
           host_after_capture=host_after_capture, dev_after_replay=int(dev[0].item()), host_after_replay=host[0])


def pageable_htod():
    pageable_copy("pageable_htod", True)


def pageable_dtoh():
    pageable_copy("pageable_dtoh", False)


SCENARIOS = {f.__name__: f for f in (cupy_escape, legacy_906, wait_905, unwrapped_log, copy_906, pageable_htod,
                                     pageable_dtoh)}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        print("usage: escape_capture.py " + "|".join(SCENARIOS), file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        result(sys.argv[1], 0, skipped=1)
        sys.exit(3)
    torch.zeros(1, device="cuda")  # the context, current on this thread
    SCENARIOS[sys.argv[1]]()
