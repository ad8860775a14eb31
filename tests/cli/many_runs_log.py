#!/usr/bin/env python3
"""Write a capguard log of many older runs and then a latest one.

usage: many_runs_log.py OUT MB [LATEST.jsonl]

Each older run is one process with one broken capture and as many
module-load events as make a run about 64 KiB; runs follow each other in
time and their lines are written one run after another, as appended
`capguard run`s leave them. LATEST's lines (a log of one run) come last,
moved after the older runs in time."""
import json
import sys

out, mb = sys.argv[1], float(sys.argv[2])
latest = sys.argv[3] if len(sys.argv) > 3 else None
T0 = 1_600_000_000_000_000_000
RUN_NS = 10_000_000_000
EVENTS = 80


def run_lines(k):
    pid, t = 10_000 + k % 50_000, T0 + k * RUN_NS
    yield {"v": 1, "type": "process", "pid": pid, "time_ns": t, "ppid": 1,
           "argv": ["python3", "serve.py", f"--run={k}"], "mode": "report",
           "driver_version": 12020, "emulate_driver": 0, "version": "0.1.0"}
    cap = {"id": 1, "stream": "0x5d1e00", "mode": "global", "tid": pid, "status": "invalidated",
           "began": "serve.py:10 in capture"}
    for e in range(EVENTS):
        yield {"v": 1, "type": "event", "pid": pid, "time_ns": t + 1000 + e, "event": "module-load",
               "call": "cuModuleLoadData", "verdict": "refused" if e == 0 else "served", "result": 0,
               "driver_result": -1, "driver_version": 12020, "emulate_driver": 0, "tid": pid,
               "thread_mode": "global", "capture": cap,
               "image": {"kind": "cubin", "size": 5120, "sm": 90, "hash": "%032x" % e,
                         "kernels": [f"kernel_{e}_{k}"], "kernels_truncated": False},
               "native_stack": ["libcapguard.so(+0x1a2b)", "libtriton.so(+0x99)", "libpython3.so(+0x1234)"],
               "python_stack": [{"file": "triton/compiler/compiler.py", "line": 385, "func": "_init_handles"},
                                {"file": f"model/layer{e % 7}.py", "line": 77 + k % 100, "func": "forward"}]}
    yield {"v": 1, "type": "capture", "pid": pid, "time_ns": t + 5000, "id": 1, "stream": "0x5d1e00",
           "mode": "global", "tid": pid, "status": "invalidated", "begin_ns": t + 500, "end_ns": t + 5000,
           "events": EVENTS, "began": "serve.py:10 in capture"}
    yield {"v": 1, "type": "summary", "pid": pid, "time_ns": t + 9000, "captures": 1, "captures_broken": 1,
           "primed_loaded": 0, "primed_served": 0, "primed_unused": 0, "recorded": 0}


with open(out, "w") as f:
    k, written = 0, 0
    while written < mb * 1024 * 1024:
        for rec in run_lines(k):
            line = json.dumps(rec, separators=(",", ":")) + "\n"
            f.write(line)
            written += len(line)
        k += 1
    if latest:
        shift = T0 + (k + 1) * RUN_NS - 1_700_000_000_000_000_000
        for line in open(latest):
            rec = json.loads(line)
            for key in ("time_ns", "begin_ns", "end_ns"):
                if isinstance(rec.get(key), int):
                    rec[key] += shift
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
