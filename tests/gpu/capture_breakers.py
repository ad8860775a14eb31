"""Real torch programs that break a torch.cuda.graph capture on every driver
(docs/driver-semantics.md, "Real programs"), one scenario
per run:
  cupy_alloc          a CuPy array created inside the capture, on torch's
                      capturing stream (CuPy's default memory pool must grow:
                      cudaMalloc -> cuMemAlloc_v2 in the capture's global mode);
  torch_pool_growth   a new 256 MiB torch tensor created inside the capture
                      (control: torch's allocator calls cudaMalloc in relaxed
                      mode during capture, so nothing breaks);
  watchdog_query      a second thread polls query() on a torch.cuda.Event
                      recorded inside the capture for ~50 ms while the
                      capture goes on with more kernels (cuEventQuery of an
                      event recorded in a capturing stream: 907, every mode);
  graph_exec_destroy  an earlier torch.cuda.CUDAGraph (captured and replayed)
                      deleted and collected inside a second graph's capture
                      (cuGraphExecDestroy in global mode: 900);
  host_unregister     a CPU tensor pinned with cudaHostRegister before the
                      capture, unregistered inside it (cuMemHostUnregister:
                      900, the capture invalidated; nothing to fix).
Prints machine-readable lines:
  INFO key=value ...
  ERROR <where>: <text>      one per exception seen (where: capture, context,
                             thread), first line of its text
  RESULT scenario=S captured=1|0 replay_ok=1|0 key=value ...
(replay_ok is 0 when there was nothing to replay). Exits 0 whether or not the
capture broke; 3 when the scenario cannot run here (RESULT ... skipped=1)."""
import argparse
import gc
import sys
import threading
import time
import warnings

import torch

N = 4096


def first_line(e):
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0] if s else ''}"


def report_exception(e, where="capture"):
    """The exception, and what it was raised while handling (torch's
    capture_end raises from the graph block's __exit__, replacing the error
    that broke the capture inside the block)."""
    print(f"ERROR {where}: {first_line(e)}", flush=True)
    seen = {id(e)}
    c = e.__context__
    while c is not None and id(c) not in seen:
        seen.add(id(c))
        print(f"ERROR context: {first_line(c)}", flush=True)
        c = c.__context__


def result(scenario, captured, replay_ok, **extra):
    tail = "".join(f" {k}={v}" for k, v in extra.items())
    print(f"RESULT scenario={scenario} captured={int(captured)} replay_ok={int(replay_ok)}{tail}", flush=True)


def fresh():
    return torch.arange(N, device="cuda", dtype=torch.float32)


def replay_check(g, x, expect):
    x.copy_(fresh())
    g.replay()
    torch.cuda.synchronize()
    return torch.equal(x, expect)


def cupy_alloc():
    try:
        import cupy
    except ImportError as e:
        print(f"RESULT scenario=cupy_alloc skipped=1 reason=no-cupy ({e})", flush=True)
        return 3
    print(f"INFO torch={torch.__version__} cupy={cupy.__version__}", flush=True)
    # CuPy 14 deprecates ExternalStream (for Stream.from_external); it still works
    warnings.filterwarnings("ignore", message="ExternalStream is deprecated", category=DeprecationWarning)
    x = fresh()
    # CuPy set up before the capture (its device, its pool, a kernel), on
    # torch's stream: inside the capture only the pool's growth is new.
    with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        warm = cupy.zeros(16, dtype=cupy.float32)
        warm += 1
        cupy.cuda.get_current_stream().synchronize()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    captured, arr = False, None
    try:
        with torch.cuda.graph(g):
            x.mul_(2.0)
            with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                arr = cupy.empty(16 << 20, dtype=cupy.float32)  # the allocation a report must name
            x.add_(1.0)
        captured = True
    except Exception as e:  # noqa: BLE001 - the point is to report what broke
        report_exception(e)
    ok = captured and replay_check(g, x, fresh() * 2.0 + 1.0)
    result("cupy_alloc", captured, ok, cupy_array=int(arr is not None))
    return 0


def torch_pool_growth():
    x = fresh()
    y = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    captured = False
    try:
        with torch.cuda.graph(g):
            big = torch.empty(64 << 20, device="cuda", dtype=torch.float32)  # 256 MiB, new inside the capture
            big.fill_(1.5)
            y.copy_(x * 2.0 + big[:N])
        captured = True
    except Exception as e:  # noqa: BLE001
        report_exception(e)
    ok = False
    if captured:
        y.zero_()
        ok = replay_check(g, x, fresh()) and torch.equal(y, fresh() * 2.0 + 1.5)
    result("torch_pool_growth", captured, ok, big_mib=256)
    return 0


def watchdog_query():
    x = fresh()
    ev = torch.cuda.Event()
    ev.record()  # created and recorded once before the capture; recorded again inside it
    torch.cuda.synchronize()
    box = {"queries": 0, "ready": 0, "error": None}

    def poll():
        deadline = time.monotonic() + 0.05
        try:
            while box["queries"] == 0 or time.monotonic() < deadline:
                box["queries"] += 1
                if ev.query():
                    box["ready"] += 1
        except Exception as e:  # noqa: BLE001 - what a watchdog thread would die of
            box["error"] = e

    g = torch.cuda.CUDAGraph()
    captured, more = False, 10
    try:
        with torch.cuda.graph(g):
            x.mul_(2.0)
            ev.record()  # recorded into the capture
            t = threading.Thread(target=poll, name="watchdog")
            t.start()
            try:
                for _ in range(more):  # the capture goes on while the watchdog polls
                    x.add_(1.0)
                    time.sleep(0.005)
            finally:
                t.join()
        captured = True
    except Exception as e:  # noqa: BLE001
        report_exception(e)
    if box["error"] is not None:
        report_exception(box["error"], "thread")
    ok = captured and replay_check(g, x, fresh() * 2.0 + float(more))
    result("watchdog_query", captured, ok, queries=box["queries"], ready=box["ready"],
           query_error=int(box["error"] is not None))
    return 0


def graph_exec_destroy():
    x = fresh()
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        x.add_(1.0)
    x.copy_(fresh())
    g1.replay()
    torch.cuda.synchronize()
    g1_ok = torch.equal(x, fresh() + 1.0)
    g2 = torch.cuda.CUDAGraph()
    captured = False
    try:
        with torch.cuda.graph(g2):
            x.mul_(2.0)
            del g1  # the earlier graph's executable is destroyed here: cudaGraphExecDestroy
            gc.collect()
            x.add_(3.0)
        captured = True
    except Exception as e:  # noqa: BLE001
        report_exception(e)
    ok = captured and replay_check(g2, x, fresh() * 2.0 + 3.0)
    result("graph_exec_destroy", captured, ok, g1_replay_ok=int(g1_ok))
    return 0


def host_unregister():
    x = fresh()
    buf = torch.zeros(1 << 20, dtype=torch.uint8)
    cudart = torch.cuda.cudart()
    reg = int(cudart.cudaHostRegister(buf.data_ptr(), buf.numel(), 0))
    if reg != 0:
        result("host_unregister", False, False, skipped=1, register_result=reg)
        return 3
    g = torch.cuda.CUDAGraph()
    captured, unreg = False, None
    try:
        with torch.cuda.graph(g):
            x.add_(1.0)
            unreg = int(cudart.cudaHostUnregister(buf.data_ptr()))
            x.mul_(2.0)
        captured = True
    except Exception as e:  # noqa: BLE001
        report_exception(e)
    ok = captured and replay_check(g, x, (fresh() + 1.0) * 2.0)
    if unreg != 0:  # still registered: undone outside the capture
        cudart.cudaHostUnregister(buf.data_ptr())
    result("host_unregister", captured, ok, unregister_result=unreg)
    return 0


SCENARIOS = {
    "cupy_alloc": cupy_alloc,
    "torch_pool_growth": torch_pool_growth,
    "watchdog_query": watchdog_query,
    "graph_exec_destroy": graph_exec_destroy,
    "host_unregister": host_unregister,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(f"RESULT scenario={args.scenario} skipped=1 reason=no-cuda", flush=True)
        return 3
    print(f"INFO scenario={args.scenario} torch={torch.__version__} device={torch.cuda.get_device_name()}", flush=True)
    return SCENARIOS[args.scenario]()


if __name__ == "__main__":
    sys.exit(main())
