#!/usr/bin/env python3
"""Writes a capguard log (docs/log-format.md) of N processes of one run, as a
launcher with N workers leaves it: each worker's start, process, one call
during capture, its capture (one worker in ten broke it) and its summary,
about 2.6 KB a process. Fast (string templates, no json module), so that 10^6
processes (2.6 GB) take about half a minute to write.
Usage: gen_many_procs_log.py OUT N"""
import sys

def main():
    out, n = sys.argv[1], int(sys.argv[2])
    t0 = 1_700_000_000_000_000_000
    run = "4242-1"
    argv = '["python3","-m","vllm.entrypoints.openai.api_server","--model","meta-llama/Llama-3.1-8B-Instruct","--tensor-parallel-size","8"]'
    stack = ",".join(f'"libtriton.so(launch+0x{i:x}) [0x7f00{i:08x}]"' for i in range(6))
    pystack = ",".join('{"file":"/venv/lib/python3.12/site-packages/vllm/model_executor/layers/linear.py","line":%d,"func":"forward"}' % (100 + i) for i in range(6))
    with open(out, "w", buffering=1 << 20) as f:
        f.write('{"v":1,"type":"start","pid":1000,"ppid":1,"time_ns":%d,"mode":"guard","version":"0.1.0","prime":"/cache/prime.cgp","run":"%s","argv":%s}\n' % (t0, run, argv))
        for i in range(n):
            pid, t = 2000 + i, t0 + i * 1_000_000
            broken = i % 10 == 0
            verdict, status = ("refused", "invalidated") if broken else ("served", "active")
            f.write(
                '{"v":1,"type":"start","pid":%d,"ppid":1000,"time_ns":%d,"mode":"guard","version":"0.1.0","prime":"/cache/prime.cgp","run":"%s","rank":%d,"local_rank":%d,"world_size":%d,"argv":%s}\n'
                '{"v":1,"type":"process","pid":%d,"ppid":1000,"time_ns":%d,"mode":"guard","driver_version":12020,"emulate_driver":0,"version":"0.1.0","prime":"/cache/prime.cgp","run":"%s","argv":%s}\n'
                '{"v":1,"type":"event","pid":%d,"time_ns":%d,"event":"module-load","call":"cuModuleLoadData","verdict":"%s","result":%d,"driver_result":%d,"driver_version":12020,"emulate_driver":0,"tid":%d,"thread_mode":"global","capture":{"id":1,"stream":"0x5d1e00","mode":"global","tid":%d,"status":"%s","began":"vllm/worker/model_runner.py:1710 in capture"},"prohibitors":1,"module":"0x7f%08x","image":{"kind":"cubin","size":5640,"sm":90,"archs":[90],"hash":"%032x","kernels":["_kernel_%d_fwd","_kernel_%d_bwd"],"kernels_truncated":false},"native_stack":[%s],"python_stack":[%s]}\n'
                '{"v":1,"type":"capture","pid":%d,"time_ns":%d,"id":1,"stream":"0x5d1e00","mode":"global","tid":%d,"status":"%s","begin_ns":%d,"end_ns":%d,"events":1,"began":"vllm/worker/model_runner.py:1710 in capture","end_result":%d}\n'
                '{"v":1,"type":"summary","pid":%d,"time_ns":%d,"captures":1,"captures_broken":%d,"events":{"module-load":1},"verdicts":{"%s":1},"primed_loaded":0,"primed_served":%d,"primed_unused":0,"recorded":0,"captures_timed":1,"capture_ns":400000,"first_capture_ns":%d}\n'
                % (pid, t, run, i, i % 8, n, argv,
                   pid, t + 10, run, argv,
                   pid, t + 200, verdict, 900 if broken else 0, 900 if broken else 0, pid, pid, status, i, i * 2654435761, i % 400, i % 400, stack, pystack,
                   pid, t + 400, pid, "failed" if broken else "ended", t + 100, t + 400, 901 if broken else 0,
                   pid, t + 500, 1 if broken else 0, verdict, 0 if broken else 1, t + 100))
    print(f"{out}: {n} processes")

if __name__ == "__main__":
    main()
