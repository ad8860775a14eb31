"""Guard mode under races and odd ends on a real driver (attacks 1, 2
and 4 of docs/reliability.md), one scenario per run:
  watchdog N      a thread started before the captures polls query() on a
                  torch.cuda.Event that each of N torch.cuda.graph captures
                  records (the thread is in the default, global, mode); the
                  last graph is replayed and checked;
  reuse           inside a torch.cuda.graph capture, an event (ctypes on
                  libcuda) is recorded into the capture and destroyed, and new
                  events are created until one has its handle; another thread
                  queries that new, never recorded event;
  wrongend MODE   a capture begun on the main thread (ctypes, capture mode
                  MODE) is ended by another thread, then by the main thread;
  nullend         cuStreamEndCapture(stream, NULL);
  destroy         the capturing stream is destroyed mid-capture; then another
                  capture on another stream begins and ends.
Prints "RESULT scenario=S key=value ..." and exits 0 unless the scenario could
not run (2). run_gpu.py (section "guard") checks the results and capguard's log."""
import ctypes
import sys
import threading
import time

import torch

cu = ctypes.CDLL("libcuda.so.1")
CUresult = ctypes.c_int
P = ctypes.c_void_p


def call(name, *args):
    return getattr(cu, name)(*args)


def result(scenario, **kv):
    print(f"RESULT scenario={scenario} " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def current_ctx():
    ctx = P()
    assert call("cuCtxGetCurrent", ctypes.byref(ctx)) == 0
    return ctx


def on_thread(ctx, fn):
    out = {}

    def run():
        call("cuCtxSetCurrent", ctx)
        out["r"] = fn()
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out["r"]


def watchdog(n):
    x = torch.zeros(1024, device="cuda")
    ev = torch.cuda.Event()
    ev.record()  # created and recorded before the first capture
    torch.cuda.synchronize()
    stop = threading.Event()
    counts = {"queries": 0, "not_ready": 0, "errors": 0, "first_error": "", "messages": set()}

    def poll():
        while not stop.is_set():
            try:
                if not ev.query():
                    counts["not_ready"] += 1
            except Exception as e:  # noqa: BLE001 - every error is counted and printed
                counts["errors"] += 1
                counts["messages"].add(str(e).splitlines()[0] if str(e) else type(e).__name__)
                if not counts["first_error"]:
                    counts["first_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            counts["queries"] += 1
    t = threading.Thread(target=poll, daemon=True)
    t.start()
    while counts["queries"] == 0:
        time.sleep(0.001)
    broken, first = 0, ""
    g = None
    for i in range(n):
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g):
                x.add_(1)
                ev.record()
                x.mul_(1)
                time.sleep(0.0005)  # the poller meets the captured event
        except Exception as e:  # noqa: BLE001
            broken += 1
            first = first or f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            torch.cuda.synchronize()
    stop.set()
    t.join()
    # Between two captures the event's last record is a node of the capture
    # that ended: the driver's own answer to a query then is an error (not
    # capguard's: asked here, on this thread, with no capture open). Errors
    # the poller met must be that answer, none other.
    after_end = ""
    try:
        ev.query()
    except Exception as e:  # noqa: BLE001
        after_end = str(e).splitlines()[0] if str(e) else type(e).__name__
    errors_are_drivers = int(counts["messages"] <= ({after_end} if after_end else set()))
    replay_ok = 0
    if g is not None and broken < n:
        x.zero_()
        g.replay()
        torch.cuda.synchronize()
        replay_ok = int(bool((x == 1).all().item()))
    result("watchdog", captures=n, broken=broken, queries=counts["queries"], not_ready=counts["not_ready"],
           query_errors=counts["errors"], errors_are_drivers=errors_are_drivers, replay_ok=replay_ok)
    if after_end:
        print("NOTE the driver's answer to a query after the capture ended: " + after_end)
    if first:
        print("ERROR capture: " + first)
    if counts["first_error"]:
        print("ERROR query: " + counts["first_error"])


REUSE_TRIES = 2048  # the H100's driver did not hand the handle out again within 16


def reuse():
    x = torch.zeros(16, device="cuda")
    ctx = current_ctx()
    e1, e2 = P(), P()
    spare = []
    g = torch.cuda.CUDAGraph()
    out = {}
    with torch.cuda.graph(g):
        x.add_(1)
        s = P(torch.cuda.current_stream().cuda_stream)
        assert call("cuEventCreate", ctypes.byref(e1), 0) == 0
        out["record"] = call("cuEventRecord", e1, s)
        out["destroy"] = call("cuEventDestroy_v2", e1)
        for _ in range(REUSE_TRIES):
            assert call("cuEventCreate", ctypes.byref(e2), 0) == 0
            if e2.value == e1.value:
                break
            spare.append(P(e2.value))
        out["reused"] = int(e2.value == e1.value)
        out["query"] = on_thread(ctx, lambda: call("cuEventQuery", e2))
    for e in spare:
        call("cuEventDestroy_v2", e)
    call("cuEventDestroy_v2", e2)
    g.replay()
    torch.cuda.synchronize()
    result("reuse", record_result=out["record"], destroy_result=out["destroy"], reused=out["reused"],
           creates=len(spare) + 1,
           query_result=out["query"], replay_ok=int(bool((x == 1).all().item())), x=x[0].item())


MODES = {"global": 0, "thread-local": 1, "relaxed": 2}


def raw_capture(mode="global"):
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the primary context, current on this thread
    s = P()
    assert call("cuStreamCreate", ctypes.byref(s), 1) == 0
    buf = ctypes.c_uint64()
    assert call("cuMemAlloc_v2", ctypes.byref(buf), ctypes.c_size_t(4096)) == 0
    begin = call("cuStreamBeginCapture_v2", s, MODES[mode])
    node = call("cuMemsetD8Async", buf, ctypes.c_ubyte(1), ctypes.c_size_t(4096), s)  # one node, as in the measurement
    return s, buf, begin, node


def wrongend(mode):
    s, buf, begin, node = raw_capture(mode)
    ctx = current_ctx()
    g = P()
    other = on_thread(ctx, lambda: call("cuStreamEndCapture", s, ctypes.byref(g)))
    if g.value:
        call("cuGraphDestroy", g)
    own = call("cuStreamEndCapture", s, ctypes.byref(g))
    st = ctypes.c_int(-1)
    call("cuStreamIsCapturing", s, ctypes.byref(st))
    x = torch.ones(8, device="cuda")  # the process carries on
    torch.cuda.synchronize()
    result("wrongend", mode=mode, begin_result=begin, node_result=node, other_end=other, own_end=own,
           capturing_after=st.value, works_after=int(x.sum().item() == 8))


def nullend():
    s, buf, begin, node = raw_capture()
    end = call("cuStreamEndCapture", s, None)
    g = P()
    again = call("cuStreamEndCapture", s, ctypes.byref(g))
    torch.cuda.synchronize()
    result("nullend", begin_result=begin, node_result=node, null_end=end, end_again=again)


def destroy():
    s, buf, begin, node = raw_capture()
    d = call("cuStreamDestroy_v2", s)
    # a call that makes capguard look at open captures, then a fresh capture
    p = ctypes.c_uint64()
    alloc = call("cuMemAlloc_v2", ctypes.byref(p), ctypes.c_size_t(64))
    s2, _, begin2, _ = raw_capture()
    g = P()
    end2 = call("cuStreamEndCapture", s2, ctypes.byref(g))
    torch.cuda.synchronize()
    result("destroy", begin_result=begin, destroy_result=d, alloc_after=alloc, begin2=begin2, end2=end2)


def main():
    if not torch.cuda.is_available():
        print("no CUDA GPU")
        return 2
    sc = sys.argv[1]
    if sc == "watchdog":
        watchdog(int(sys.argv[2]))
    elif sc == "reuse":
        reuse()
    elif sc == "wrongend":
        wrongend(sys.argv[2])
    elif sc == "nullend":
        nullend()
    elif sc == "destroy":
        destroy()
    else:
        print("unknown scenario")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
