"""The hang watch (CAPGUARD_HANG_S) over the fake driver, with hang_probe:
  - two ranks (RANK 0 and 1, WORLD_SIZE 2) each capture a graph, replay it
    and synchronize a stream that FAKECUDA_SYNC_BLOCK_MS holds for 2.5 s;
    under CAPGUARD_HANG_S=1 each says, once, "rank R (pid P) waits in
    cuStreamSynchronize" with its thread (and the thread's name), the stream,
    who called, and the latest graph captured (capture 1's, where it began);
    each exits as soon as the synchronize returns;
  - the same without CAPGUARD_HANG_S says nothing of the kind;
  - a capture left open 3 s is said once with its thread, stream and where it
    began, and written to the log as a hang-capture record;
  - a bad value is said in one line and the program runs as without it,
    " 5" and "+5" included (digits only);
  - the watcher harms no host: it starts only once the process uses CUDA
    (a process that never does has one thread; one that enters a new user
    namespace first, which a process of two threads may not, can, and
    `unshare -U` under the shim too), with every signal blocked (a host
    that blocks SIGTERM after its CUDA set-up and takes it through a
    signalfd gets it and exits 0, not 143);
  - a thread's slot is given back when it ends: after 600 threads each
    synchronized once and exited, a 3 s wait on a new thread is said;
  - a thread cancelled 200 ms into a synchronize, and gone, is never said
    to wait."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

SHIM = os.environ["CG_SHIM"]


def line_of(text):
    """The line of hang_probe.c (built with -g) holding text: the site named."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hang_probe.c")) as f:
        hits = [i for i, t in enumerate(f, 1) if text in t]
    assert len(hits) == 1, (text, hits)
    return hits[0]


FAKE_DIR = os.environ["CG_FAKE_DIR"]
PROBE = os.environ["CG_HANG_PROBE"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


def start(args, extra, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env.update(LD_LIBRARY_PATH=FAKE_DIR, LD_PRELOAD=SHIM, CAPGUARD_PRIME=os.path.join(tmp, "p.cgp"), **extra)
    return subprocess.Popen([PROBE] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p):
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


with tempfile.TemporaryDirectory() as tmp:
    # two ranks wait in a synchronize after replaying their graph
    t0 = time.monotonic()
    ranks = [start(["sync"], {"RANK": str(r), "WORLD_SIZE": "2", "CAPGUARD_HANG_S": "1",
                              "FAKECUDA_SYNC_BLOCK_MS": "2500"}, tmp) for r in (0, 1)]
    done = [finish(p) for p in ranks]
    took = time.monotonic() - t0
    for r, (rc, out, err) in enumerate(done):
        pid = ranks[r].pid
        check(rc == 0 and "done=1" in out, f"rank {r}: the probe ran to its end (rc {rc}): {err}")
        said = [l for l in err.splitlines() if "waits in" in l]
        check(len(said) == 1, f"rank {r}: the wait said once, not {len(said)}: {err}")
        line = said[0] if said else ""
        want = (rf"^capguard: rank {r} \(pid {pid}\) waits in cuStreamSynchronize for [0-9.]+ s "
                rf"\(thread {pid} 'hang_probe', stream 0x[0-9a-f]+, called from "
                rf"hang_probe\([a-z_]+\+0x[0-9a-f]+\) at hang_probe\.c:{line_of('cuStreamSynchronize(s)')}\); "
                rf"the latest graph captured here is capture 1's, captured at hang_probe\([a-z_]+\+0x[0-9a-f]+\) "
                rf"at hang_probe\.c:{line_of('cuStreamBeginCapture_v2(s')}$")
        check(re.match(want, line), f"rank {r}: the wait's words\n  want {want}\n  got  {line}")
    # the sync is held 2.5 s; each rank then exits at once (the watcher never holds the exit)
    check(took < 2.5 + 3.0, f"the two ranks took {took:.1f} s for a 2.5 s wait")

    # off: nothing said
    rc, out, err = finish(start(["sync"], {"RANK": "0", "FAKECUDA_SYNC_BLOCK_MS": "1500"}, tmp))
    check(rc == 0 and "done=1" in out, f"off: the probe ran (rc {rc})")
    check("waits in" not in err and "capture open" not in err, f"off: the hang watch said something: {err}")

    # a capture left open
    t0 = time.monotonic()
    open_log = os.path.join(tmp, "open.jsonl")
    rc, out, err = finish(start(["open", "3"], {"RANK": "1", "CAPGUARD_HANG_S": "1", "CAPGUARD_LOG": open_log}, tmp))
    took = time.monotonic() - t0
    said = [l for l in err.splitlines() if "has had a capture open" in l]
    check(rc == 0 and "done=1" in out, f"open: the probe ran (rc {rc}): {err}")
    check(len(said) == 1, f"open: said once, not {len(said)}: {err}")
    check(bool(said) and re.match(r"^capguard: rank 1 \(pid [0-9]+\) has had a capture open for [0-9.]+ s "
                                  r"\(thread [0-9]+ 'hang_probe', stream 0x[0-9a-f]+, begun at hang_probe\([a-z_]+\+0x[0-9a-f]+\) "
                                  rf"at hang_probe\.c:{line_of('cuStreamBeginCapture_v2(s')}\)",
                                  said[0]), f"open: the words: {said}")
    check(took < 3 + 2.0, f"open: took {took:.1f} s for a 3 s capture")
    with open(open_log) as f:
        recs = [json.loads(l) for l in f if l.strip()]
    opened = [r for r in recs if r.get("type") == "event" and r.get("event") == "hang-capture"]
    check(len(opened) == 1 and "hang_probe.c:" in opened[0]["capture"]["began"] and opened[0]["verdict"] == "waiting",
          f"open: the hint is a record in the log too: {opened}")

    # a bad value: one line, and the program runs as without the watch
    rc, out, err = finish(start(["sync"], {"CAPGUARD_HANG_S": "soon"}, tmp))
    check(rc == 0 and "done=1" in out, "bad value: the probe ran")
    check(err.count("CAPGUARD_HANG_S=soon is not a number of seconds") == 1, f"bad value: said once: {err}")

    for bad in (" 5", "+5"):
        rc, out, err = finish(start(["sync"], {"CAPGUARD_HANG_S": bad, "FAKECUDA_SYNC_BLOCK_MS": "1500"}, tmp))
        check(rc == 0 and "done=1" in out, f"{bad!r}: the probe ran")
        check(err.count(f"CAPGUARD_HANG_S={bad} is not a number of seconds from 1 to 86400: the hang watch is off") == 1,
              f"{bad!r}: refused in one line: {err}")
        check("waits in" not in err, f"{bad!r}: the watch is off: {err}")

    # a process that never uses CUDA has no thread of capguard's
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env.update(LD_PRELOAD=SHIM, CAPGUARD_HANG_S="1")
    p = subprocess.run(["sh", "-c", "ls /proc/$$/task | wc -l"], env=env, capture_output=True, text=True, timeout=30)
    check(p.stdout.strip() == "1", f"no CUDA: {p.stdout.strip()} threads in a shell under the watch, wanted 1")

    # a host that takes SIGTERM through a signalfd (SIGTERM blocked after its CUDA set-up)
    p = start(["signalfd"], {"CAPGUARD_HANG_S": "1"}, tmp)
    ready = p.stdout.readline()
    check(ready.strip() == "ready", f"signalfd: the probe got ready: {ready!r}")
    time.sleep(0.3)  # the watcher looks at least once meanwhile
    p.send_signal(signal.SIGTERM)
    rc, out, err = finish(p)
    check(rc == 0 and "got SIGTERM" in out, f"signalfd: the host took its SIGTERM and exited 0, not {rc}: {out} {err}")

    # a new user namespace before CUDA: no watcher yet, so it may; one after
    if subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode != 0:
        print("SKIP: unshare -U: user namespaces are not allowed here (checked without capguard)")
    else:
        rc, out, err = finish(start(["unshare"], {"CAPGUARD_HANG_S": "1"}, tmp))
        check(rc == 0 and "threads=1 unshare=OK threads_after=2" in out,
              f"unshare: one thread before CUDA, the namespace entered, the watcher after: {out} {err}")
        p = subprocess.run(["unshare", "-U", "true"], env=env, capture_output=True, text=True, timeout=30)
        check(p.returncode == 0, f"unshare -U under the shim with the watch on: rc {p.returncode}: {p.stderr}")

    # slots given back: 600 threads come and go, then a 3 s wait is said
    rc, out, err = finish(start(["reuse", "600"], {"CAPGUARD_HANG_S": "1"}, tmp))
    said = [l for l in err.splitlines() if "waits in cuStreamSynchronize" in l]
    check(rc == 0 and "done=1" in out, f"reuse: the probe ran (rc {rc}): {err[-300:]}")
    check(len(said) == 1, f"reuse: the 601st thread's 3 s wait said once, not {len(said)}: {err[-500:]}")

    # a thread cancelled inside a synchronize is gone: never said to wait
    rc, out, err = finish(start(["cancel"], {"CAPGUARD_HANG_S": "1"}, tmp))
    check(rc == 0 and "done=1" in out, f"cancel: the probe ran (rc {rc}): {err}")
    check("waits in" not in err, f"cancel: a cancelled thread said to wait: {err}")

print("hang watch: " + ("ok" if not failures else f"{failures} failed"))
sys.exit(1 if failures else 0)
