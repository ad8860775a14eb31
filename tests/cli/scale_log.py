#!/usr/bin/env python3
"""Write a capguard log whose size is a count, for tests that compare a
report's cost at two sizes (string templates: a few seconds at 10^5 lines).

usage: scale_log.py runs N OUT          N runs of one process each: a process
                                        line, a call during its capture (one
                                        run in four broke it), the capture, its
                                        summary; runs follow each other in time
       scale_log.py procs N OUT LATEST  N processes in older runs of a launcher
                                        and 7 workers (start, process, capture,
                                        summary each), then LATEST's lines (a
                                        log of one run) moved after them in time
"""
import json
import sys

T0 = 1_600_000_000_000_000_000
RUN_NS = 10_000_000_000


def runs(f, n):
    for k in range(n):
        pid, t = 10_000 + k % 50_000, T0 + k * RUN_NS
        broke = k % 4 == 0
        verdict, status = ("refused", "invalidated") if broke else ("served", "active")
        f.write(
            '{"v":1,"type":"process","pid":%d,"time_ns":%d,"ppid":1,"argv":["python3","serve.py","--run=%d"],'
            '"mode":"guard","driver_version":12020,"emulate_driver":0,"version":"0.1.0"}\n'
            '{"v":1,"type":"event","pid":%d,"time_ns":%d,"event":"module-load","call":"cuModuleLoadData",'
            '"verdict":"%s","result":0,"driver_result":-1,"driver_version":12020,"emulate_driver":0,"tid":%d,'
            '"thread_mode":"global","capture":{"id":1,"stream":"0x5d1e00","mode":"global","tid":%d,'
            '"status":"%s","began":"serve.py:10 in capture"},"image":{"kind":"cubin","size":5120,"sm":90,'
            '"hash":"%032x","kernels":["kernel_%d"],"kernels_truncated":false},"native_stack":[],'
            '"python_stack":[{"file":"model/layer%d.py","line":77,"func":"forward"}]}\n'
            '{"v":1,"type":"capture","pid":%d,"time_ns":%d,"id":1,"stream":"0x5d1e00","mode":"global",'
            '"tid":%d,"status":"%s","begin_ns":%d,"end_ns":%d,"events":1,"began":"serve.py:10 in capture"}\n'
            '{"v":1,"type":"summary","pid":%d,"time_ns":%d,"captures":1,"captures_broken":%d,'
            '"primed_loaded":0,"primed_served":0,"primed_unused":0,"recorded":0}\n'
            % (pid, t, k,
               pid, t + 1000, verdict, pid, pid, status, k % 64, k % 64, k % 7,
               pid, t + 5000, pid, "failed" if broke else "ended", t + 500, t + 5000,
               pid, t + 9000, 1 if broke else 0))
    return T0 + n * RUN_NS


def procs(f, n):
    k, run = 0, 0
    while k < n:
        parent, t = 100_000 + k % 3_000_000, T0 + run * RUN_NS
        f.write('{"v":1,"type":"start","pid":%d,"ppid":1,"time_ns":%d,"mode":"guard","version":"0.1.0",'
                '"run":"%d-%x","argv":["torchrun","--nproc-per-node=7","serve.py"]}\n' % (parent, t, parent, run))
        k += 1
        for w in range(1, 8):
            if k >= n:
                break
            pid, tw = parent + w, t + w * 1000
            f.write(
                '{"v":1,"type":"start","pid":%d,"ppid":%d,"time_ns":%d,"mode":"guard","version":"0.1.0",'
                '"run":"%d-%x","rank":%d,"argv":["python3","serve.py"]}\n'
                '{"v":1,"type":"process","pid":%d,"ppid":%d,"time_ns":%d,"mode":"guard","driver_version":12020,'
                '"emulate_driver":0,"version":"0.1.0","run":"%d-%x","argv":["python3","serve.py"]}\n'
                '{"v":1,"type":"capture","pid":%d,"time_ns":%d,"id":1,"stream":"0x5d1e00","mode":"global",'
                '"tid":%d,"status":"ended","begin_ns":%d,"end_ns":%d,"events":0,"began":"serve.py:10 in capture"}\n'
                '{"v":1,"type":"summary","pid":%d,"time_ns":%d,"captures":1,"captures_broken":0,'
                '"primed_loaded":0,"primed_served":0,"primed_unused":0,"recorded":0}\n'
                % (pid, parent, tw, parent, run, w - 1,
                   pid, parent, tw + 10, parent, run,
                   pid, tw + 500, pid, tw + 100, tw + 500,
                   pid, tw + 900))
            k += 1
        run += 1
    return T0 + run * RUN_NS


def latest(f, path, after):
    shift = after + RUN_NS - 1_700_000_000_000_000_000
    for line in open(path):
        rec = json.loads(line)
        for key in ("time_ns", "begin_ns", "end_ns"):
            if isinstance(rec.get(key), int):
                rec[key] += shift
        f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def main():
    what, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(out, "w", buffering=1 << 20) as f:
        if what == "runs":
            runs(f, n)
        else:
            latest(f, sys.argv[4], procs(f, n))


if __name__ == "__main__":
    main()
