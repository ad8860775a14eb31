#!/usr/bin/env python3
"""Writes a capguard log (docs/log-format.md) of about SIZE bytes, shaped like a
large fleet's: many runs appended to one file, each a parent and workers;
workers begin many captures, and some calls during capture carry full Python
and native stacks. Deterministic (seeded), so that figures compare.
Usage: gen_report_log.py OUT SIZE   (SIZE like 1G, 256M, 4096)"""
import json
import random
import sys

def size_arg(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    return int(s[:-1] if s[-1:].isalpha() else s) * mult

def main():
    out, want = sys.argv[1], size_arg(sys.argv[2])
    rnd = random.Random(1)
    kernels = [f"_kernel_{i}_fwd" for i in range(400)]
    files = [f"/venv/lib/python3.12/site-packages/model/layer_{i}.py" for i in range(200)]
    t = 1_700_000_000_000_000_000
    pid = 1000
    written = 0
    run = 0
    with open(out, "w") as f:
        def put(o):
            nonlocal written
            line = json.dumps(o, separators=(",", ":")) + "\n"
            f.write(line)
            written += len(line)
        while written < want:
            run += 1
            parent = pid = pid + 1
            runid = f"{parent}-{run:x}"
            put({"v": 1, "type": "start", "pid": parent, "ppid": 1, "time_ns": t, "mode": "guard",
                 "version": "0.1.0", "prime": "/cache/prime.cgp", "run": runid,
                 "argv": ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]})
            for w in range(8):
                pid += 1
                t += 1000
                put({"v": 1, "type": "start", "pid": pid, "ppid": parent, "time_ns": t, "mode": "guard",
                     "version": "0.1.0", "prime": "/cache/prime.cgp", "run": runid,
                     "argv": ["python3", "-c", "from multiprocessing.spawn import spawn_main"]})
                put({"v": 1, "type": "process", "pid": pid, "ppid": parent, "time_ns": t, "mode": "guard",
                     "driver_version": 12020, "emulate_driver": 0, "version": "0.1.0",
                     "prime": "/cache/prime.cgp", "run": runid,
                     "argv": ["python3", "-c", "from multiprocessing.spawn import spawn_main"]})
                for cap in range(1, 61):
                    t += 100_000
                    begin = t
                    n_events = 1 if rnd.random() < 0.35 else 0
                    for _ in range(n_events):
                        t += 10_000
                        k = rnd.sample(kernels, 2)
                        verdict = rnd.choice(["refused", "served", "served", "deferred", "allowed"])
                        put({"v": 1, "type": "event", "pid": pid, "time_ns": t,
                             "event": "module-unload" if verdict == "deferred" else "module-load",
                             "call": "cuModuleUnload" if verdict == "deferred" else "cuModuleLoadData",
                             "verdict": verdict, "result": 900 if verdict == "refused" else 0,
                             "driver_result": 900 if verdict == "refused" else 0, "driver_version": 12020,
                             "emulate_driver": 0, "tid": pid, "thread_mode": "global",
                             "capture": {"id": cap, "stream": "0x5d1e00", "mode": "global", "tid": pid,
                                         "status": "invalidated" if verdict == "refused" else "active",
                                         "began": "vllm/worker/model_runner.py:1710 in capture"},
                             "prohibitors": 1, "module": f"0x{rnd.getrandbits(40):x}",
                             "image": {"kind": "cubin", "size": 5640, "sm": 90, "archs": [90],
                                       "hash": f"{rnd.getrandbits(128):032x}", "kernels": k,
                                       "kernels_truncated": False},
                             "native_stack": [f"libtriton.so(launch+0x{rnd.getrandbits(12):x}) [0x7f{rnd.getrandbits(40):x}]"
                                              for _ in range(6)],
                             "python_stack": [{"file": rnd.choice(files), "line": rnd.randrange(1, 2000),
                                               "func": "forward"} for _ in range(6)]})
                    t += 50_000
                    broken = n_events and verdict == "refused"
                    put({"v": 1, "type": "capture", "pid": pid, "time_ns": t, "id": cap, "stream": "0x5d1e00",
                         "mode": "global", "tid": pid, "status": "failed" if broken else "ended",
                         "begin_ns": begin, "end_ns": t, "events": n_events,
                         "began": "vllm/worker/model_runner.py:1710 in capture"})
                put({"v": 1, "type": "summary", "pid": pid, "time_ns": t, "captures": 60,
                     "captures_broken": 0, "events": {}, "verdicts": {}, "primed_loaded": 0,
                     "primed_served": 0, "primed_unused": 0, "recorded": 0, "log": out})
            t += 60_000_000_000  # the next run a minute later
    print(f"{out}: {written} bytes, {run} runs")

if __name__ == "__main__":
    main()
