"""How often capguard takes each of its locks a capture (guard mode, over the
fake driver): bench_threads with 1 and with 64 threads, under lock_count.so
(bench/lock_count.c), which counts every mutex and read-write lock taken by
its address. No mutex of capguard's is taken more than twice a capture (the
capture model's shard of the stream: once as a capture begins, once as it
ends; an end took it twice, once before the driver's end only to stamp a
tick), no more than three mutexes and two shared locks of capguard's a
capture in all, and with 64 threads on streams of their own no one mutex
more than 0.5 times a capture: the model's lock was one queue that every
thread capturing at once met (2 a capture); its shards by stream are met by
the few threads whose streams share one. (The capture gate is not a pthread
lock: its shared holders count themselves on lines of their own,
shim/model/capture_gate.c.)
Usage: capture_locks.py BUILDDIR LOCK_COUNT_SO"""
import collections
import os
import subprocess
import sys
import tempfile

build, counter = sys.argv[1], sys.argv[2]
bench = os.path.join(build, "bench", "bench_threads")
shim = os.path.join(build, "shim", "libcapguard.so")
fake = os.path.join(build, "tests", "fakecuda")
failed = []
for threads, iterations in ((1, 2000), (64, 100)):
    captures = threads * iterations
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "locks")
        env = dict(os.environ, LD_LIBRARY_PATH=fake, LD_PRELOAD=counter + ":" + shim, LOCK_COUNT_OUT=out,
                   CAPGUARD_MODE="guard", CAPGUARD_QUIET="1", CAPGUARD_SUMMARY="0",
                   CAPGUARD_PRIME=os.path.join(tmp, "p.cgp"))
        subprocess.run([bench, str(threads), str(iterations)], env=env, check=True, stdout=subprocess.DEVNULL)
        taken = collections.Counter()
        most = (0, "")
        for line in open(out):
            lib, kind, addr, n = line.split()
            if lib != "libcapguard.so":
                continue
            taken[kind] += int(n)
            if kind == "mutex" and int(n) > most[0]:
                most = (int(n), addr)
    per = {k: v / captures for k, v in taken.items()}
    print("%d threads, %d captures: capguard's mutexes %.2f a capture (the busiest %.2f), shared locks %.2f, "
          "exclusive %.2f" % (threads, captures, per.get("mutex", 0), most[0] / captures, per.get("rdlock", 0),
                              per.get("wrlock", 0)))
    # A few more than a capture's share: start-up, a thread's first capture.
    slack = 0.05
    if most[0] / captures > 2 + slack:
        failed.append("%d threads: one mutex of capguard's taken %.2f times a capture (at most 2)" %
                      (threads, most[0] / captures))
    if threads == 64 and most[0] / captures > 0.5:
        failed.append("64 threads: one mutex of capguard's taken %.2f times a capture (at most 0.5: "
                      "a queue every capturing thread meets)" % (most[0] / captures))
    if per.get("mutex", 0) > 3 + slack:
        failed.append("%d threads: capguard's mutexes taken %.2f times a capture (at most 3)" %
                      (threads, per["mutex"]))
    if per.get("rdlock", 0) > 2 + slack or per.get("wrlock", 0) > slack:
        failed.append("%d threads: capguard's read-write locks taken %.2f shared and %.2f exclusive a capture "
                      "(at most 2 and none)" % (threads, per.get("rdlock", 0), per.get("wrlock", 0)))
for f in failed:
    print("FAIL:", f)
sys.exit(1 if failed else 0)
