"""The hang watch (CAPGUARD_HANG_S) over the fake driver, with hang_probe:
  - two ranks (RANK 0 and 1, WORLD_SIZE 2) each capture a graph, replay it
    and synchronize a stream that FAKECUDA_SYNC_BLOCK_MS holds for 2.5 s;
    under CAPGUARD_HANG_S=1 each says, once, "rank R (pid P) waits in
    cuStreamSynchronize" with its thread (and the thread's name), the stream,
    who called, and the latest graph captured (capture 1's, where it began);
    each exits as soon as the synchronize returns;
  - the same without CAPGUARD_HANG_S says nothing of the kind;
  - a capture left open 3 s is said once with its thread, stream and where it
    began;
  - a bad value is said in one line and the program runs as without it."""
import os
import re
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
    rc, out, err = finish(start(["open", "3"], {"RANK": "1", "CAPGUARD_HANG_S": "1"}, tmp))
    took = time.monotonic() - t0
    said = [l for l in err.splitlines() if "has had a capture open" in l]
    check(rc == 0 and "done=1" in out, f"open: the probe ran (rc {rc}): {err}")
    check(len(said) == 1, f"open: said once, not {len(said)}: {err}")
    check(bool(said) and re.match(r"^capguard: rank 1 \(pid [0-9]+\) has had a capture open for [0-9.]+ s "
                                  r"\(thread [0-9]+ 'hang_probe', stream 0x[0-9a-f]+, begun at hang_probe\([a-z_]+\+0x[0-9a-f]+\) "
                                  rf"at hang_probe\.c:{line_of('cuStreamBeginCapture_v2(s')}\)",
                                  said[0]), f"open: the words: {said}")
    check(took < 3 + 2.0, f"open: took {took:.1f} s for a 3 s capture")

    # a bad value: one line, and the program runs as without the watch
    rc, out, err = finish(start(["sync"], {"CAPGUARD_HANG_S": "soon"}, tmp))
    check(rc == 0 and "done=1" in out, "bad value: the probe ran")
    check(err.count("CAPGUARD_HANG_S=soon is not a number of seconds") == 1, f"bad value: said once: {err}")

print("hang watch: " + ("ok" if not failures else f"{failures} failed"))
sys.exit(1 if failures else 0)
