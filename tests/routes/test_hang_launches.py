"""The hang watch's graph launches (CAPGUARD_HANG_S, docs/hangs.md) over the
fake driver, with hang_probe's launch and teardown modes
(FAKECUDA_LAUNCH_HOLD_MS/_AT hold a launch as a peer that never comes, or a
long kernel, would):
  - launch: a rank whose 3rd launch of an NCCL graph does not finish says so
    once, on stderr and in the log (a hang-launch record): the rank, the
    exec, its capture and where it began, the launch (3), its collective by
    name; report text, JSON, HTML and trace show it;
  - markers only with the watch on: without CAPGUARD_HANG_S, capguard makes
    no driver call of its own at a launch (the fake's trace has the
    program's calls only); with it, one cuEventRecord after each launch and
    events created once, none while a capture is open;
  - who is behind: rank 0 hangs in its 3rd launch, rank 1 launched twice and
    went quiet; the report of their log names rank 1 as behind and rank 0
    waiting in its launch 3, with the graph's capture line;
  - busy: a graph with no collective, held, is called busy (no rank behind);
  - teardown: a context synchronize waiting 2.5 s while an exec holding a
    collective is alive and nothing of it is pending is said with the fix
    (reset or delete them before destroy_process_group) and logged as
    hang-teardown; the exit summary counts the exec still alive
    (collective_execs_alive), in a run that never hung too; a main thread
    that waits 2.5 s on a futex (outside the driver, as NCCL's destroy
    does) with such an exec alive and nothing launched is said once, with
    the fix;
  - the wait's own site in the host's terms: a CPython program that waits
    in cuStreamSynchronize through ctypes is said to wait at its own line
    (the script's, in its function), not at ctypes' or libffi's frame; a
    native program that waits through a libcudart (a stand-in with frames
    of its own) is said to wait at its own line, the library's frames
    skipped;
  - ranks compared by the images they loaded during capture: two ranks that
    each captured one graph, loading a different image in it, are not said
    to have captured alike: the difference names the image and the ranks."""
import json
import os
import re
import subprocess
import sys
import tempfile

SHIM = os.environ["CG_SHIM"]
FAKE_DIR = os.environ["CG_FAKE_DIR"]
PROBE = os.environ["CG_HANG_PROBE"]
CLI = os.environ["CG_CLI"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


def line_of(text):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hang_probe.c")) as f:
        hits = [i for i, t in enumerate(f, 1) if text in t]
    assert len(hits) == 1, (text, hits)
    return hits[0]


CAPTURED = rf"hang_probe\(one_kernel_graph\+0x[0-9a-f]+\) at hang_probe\.c:{line_of('the graph' + chr(39) + 's capture line')}"


def env_for(tmp, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
    env.update(LD_LIBRARY_PATH=FAKE_DIR, LD_PRELOAD=SHIM, CAPGUARD_PRIME=os.path.join(tmp, "p.cgp"), **extra)
    return env


def run(args, tmp, extra):
    p = subprocess.run([PROBE] + args, env=env_for(tmp, extra), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def records(log):
    with open(log) as f:
        return [json.loads(l) for l in f if l.strip()]


def events(log, kind):
    return [r for r in records(log) if r.get("type") == "event" and r.get("event") == kind]


def report(*args):
    return subprocess.run([CLI, "report", *args], capture_output=True, text=True, timeout=60).stdout


with tempfile.TemporaryDirectory() as tmp:
    # a launch that does not finish
    log = os.path.join(tmp, "one.jsonl")
    rc, out, err = run(["launch", "nccl", "3", "0"], tmp,
                       {"RANK": "0", "WORLD_SIZE": "2", "CAPGUARD_HANG_S": "1", "CAPGUARD_LOG": log,
                        "FAKECUDA_LAUNCH_HOLD_MS": "2500", "FAKECUDA_LAUNCH_HOLD_AT": "3"})
    check(rc == 0 and "done=1" in out, f"launch: the probe ran (rc {rc}): {err}")
    said = [l for l in err.splitlines() if "has not finished" in l]
    check(len(said) == 1, f"launch: said once, not {len(said)}: {err}")
    want = (rf"^capguard: rank 0 \(pid \d+\): launch 3 of graph exec 0x[0-9a-f]+ \(capture 1, captured at {CAPTURED}\) "
            rf"has not finished after [0-9.]+ s \(stream 0x[0-9a-f]+\); it holds 1 collective "
            rf"\(ncclDevKernel_AllReduce_Sum_f32_RING_LL\): waiting for a peer")
    check(bool(said) and re.match(want, said[0]), f"launch: the words\n  want {want}\n  got  {said}")
    hung = events(log, "hang-launch")
    check(len(hung) == 1 and hung[0]["hang"]["launches"] == 3 and hung[0]["hang"]["collectives"] == 1
          and hung[0]["hang"]["collective"] == "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
          and hung[0]["capture"]["id"] == 1 and hung[0]["verdict"] == "waiting",
          f"launch: one hang-launch record with launch 3, its collective and capture: {hung}")
    text = report(log)
    check(re.search(r"rank 0 \(pid \d+\): launch 3 of graph exec 0x[0-9a-f]+ \(capture 1, captured at " + CAPTURED, text)
          is not None, f"launch: report text shows it: {text}")
    js = json.loads(report("--json", log))
    check(any(e["event"] == "hang-launch" and e["launches"] == 3 for e in js.get("hang", {}).get("events", [])),
          f"launch: report JSON shows it: {js.get('hang')}")
    report("--html", os.path.join(tmp, "r.html"), "--trace", os.path.join(tmp, "r.trace"), log)
    html = open(os.path.join(tmp, "r.html")).read()
    check("Hangs (CAPGUARD_HANG_S)" in html and "launch 3 of graph exec" in html, "launch: report HTML shows it")
    trace = json.load(open(os.path.join(tmp, "r.trace")))
    evs = trace["traceEvents"] if isinstance(trace, dict) else trace
    check(any(e.get("cat") == "hang" and e.get("name") == "hang-launch" for e in evs), "launch: the trace shows it")

    # markers only with the watch on, never while a capture is open
    for on in (False, True):
        trace_path = os.path.join(tmp, f"trace{int(on)}.txt")
        extra = {"FAKECUDA_TRACE": trace_path, "FAKECUDA_TRACE_RULE": "1"}
        if on:
            extra["CAPGUARD_HANG_S"] = "5"
        rc, out, err = run(["launch", "nccl", "4", "0"], tmp, extra)
        lines = open(trace_path).read().splitlines()
        calls = [l.split()[0] for l in lines]
        check(rc == 0, f"markers (watch {'on' if on else 'off'}): the probe ran: {err}")
        if not on:
            check("cuEventRecord" not in calls and "cuEventCreate" not in calls,
                  f"markers: no driver call of capguard's at a launch with the watch off: {sorted(set(calls))}")
        else:
            check(calls.count("cuEventRecord") == 4, f"markers: one record after each of 4 launches: {calls}")
            check(1 <= calls.count("cuEventCreate") <= 4, f"markers: events created once each: {calls}")
            ours = [l for l in lines if l.split()[0] in ("cuEventRecord", "cuEventCreate", "cuEventQuery")]
            check(all("capturing=0" in l for l in ours),
                  f"markers: none made while a capture is open: {[l for l in ours if 'capturing=0' not in l]}")

    # who is behind: both ranks in one log, as a launcher's ranks are
    log = os.path.join(tmp, "ranks.jsonl")
    base = {"WORLD_SIZE": "2", "CAPGUARD_HANG_S": "1", "CAPGUARD_LOG": log}
    r0 = subprocess.Popen([PROBE, "launch", "nccl", "3", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env_for(tmp, dict(base, RANK="0", FAKECUDA_LAUNCH_HOLD_MS="3000",
                                                FAKECUDA_LAUNCH_HOLD_AT="3")))
    r1 = subprocess.Popen([PROBE, "launch", "nccl", "2", "3000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env_for(tmp, dict(base, RANK="1")))
    for p in (r0, r1):
        p.communicate(timeout=60)
    check(len(events(log, "launch-count")) >= 1, "ranks: the quiet rank's launch count is in the log")
    text = report(log)
    want = (rf"the graph captured at {CAPTURED} \(capture 1\): rank 0 launched it 3 times, rank 1 launched it 2 times: "
            r"rank 0 waits in its launch 3, for rank 1, which is behind")
    check(re.search(want, text) is not None, f"ranks: the report names the rank behind\n  want {want}\n  got {text}")
    check("hangs located by the hang watch" in text and "nothing to do" not in text,
          f"ranks: the report's advice points at the hangs, never all clear: {text}")

    # busy: no collective in the held graph
    log = os.path.join(tmp, "busy.jsonl")
    rc, out, err = run(["launch", "busy", "1", "0"], tmp,
                       {"RANK": "0", "WORLD_SIZE": "2", "CAPGUARD_HANG_S": "1", "CAPGUARD_LOG": log,
                        "FAKECUDA_LAUNCH_HOLD_MS": "2500"})
    text = report(log)
    check("it holds no collective (1 kernel, the first busy_spin): busy" in err, f"busy: said busy on stderr: {err}")
    check(re.search(rf"rank 0 is busy in launch 1 of the graph captured at {CAPTURED}", text) is not None
          and "which is behind" not in text and "waiting for a peer" not in text,
          f"busy: the report calls it busy, names no rank behind: {text}")

    # teardown held by live graphs
    log = os.path.join(tmp, "teardown.jsonl")
    rc, out, err = run(["teardown"], tmp, {"CAPGUARD_HANG_S": "1", "CAPGUARD_LOG": log})
    said = [l for l in err.splitlines() if "holding collectives is alive" in l]
    check(rc == 0 and "done=1" in out, f"teardown: the probe ran (rc {rc}): {err}")
    check(len(said) == 1 and "waits in cuCtxSynchronize" in said[0] and "captured at hang_probe(one_kernel_graph" in said[0]
          and "reset or delete them" in said[0] and "before destroy_process_group" in said[0]
          and "docs/hangs.md" in said[0], f"teardown: said once, with where and the fix: {err}")
    td = events(log, "hang-teardown")
    check(len(td) == 1 and td[0]["hang"]["execs"] == 1, f"teardown: a hang-teardown record: {td}")
    summ = [r for r in records(log) if r.get("type") == "summary"]
    check(summ and summ[-1].get("collective_execs_alive") == 1, f"teardown: the summary counts the live exec: {summ}")
    check("reset or delete them" in report(log), "teardown: the report says the fix")

    # teardown held outside the driver (a futex)
    log = os.path.join(tmp, "futex.jsonl")
    rc, out, err = run(["teardown-futex"], tmp, {"CAPGUARD_HANG_S": "1", "CAPGUARD_LOG": log})
    said = [l for l in err.splitlines() if "the main thread has waited" in l]
    check(rc == 0 and len(said) == 1 and "outside the driver (in a futex)" in said[0]
          and "1 graph exec holding collectives is alive" in said[0] and "before destroy_process_group" in said[0],
          f"futex: said once with the fix: {err}")
    check(len(events(log, "hang-teardown")) == 1, "futex: a hang-teardown record")

    # at exit, counted in a run that never hung
    log = os.path.join(tmp, "quiet.jsonl")
    rc, out, err = run(["launch", "nccl", "1", "0"], tmp, {"CAPGUARD_HANG_S": "30", "CAPGUARD_LOG": log})
    summ = [r for r in records(log) if r.get("type") == "summary"]
    check(summ and summ[-1].get("collective_execs_alive") == 1 and "1 graph exec holding collectives still alive" in err,
          f"exit: the live exec counted without any hang: {summ} {err}")
    check(not [r for r in records(log) if r.get("type") == "event"], "exit: a healthy run writes no hang event")

    # ranks that loaded different images during capture
    log = os.path.join(tmp, "images.jsonl")
    ps = [subprocess.Popen([PROBE, "capload", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env_for(tmp, {"RANK": str(r), "WORLD_SIZE": "2", "CAPGUARD_LOG": log}))
          for r, name in ((0, "k_alpha"), (1, "k_beta"))]
    for p in ps:
        p.communicate(timeout=60)
    text = report(log)
    check("captured alike" not in text, f"images: the ranks are not said to have captured alike: {text}")
    check(re.search(r"rank 0 loaded an image during capture that rank 1 did not \(hash [0-9a-f]+, kernel k_alpha\)", text)
          and re.search(r"rank 1 loaded an image during capture that rank 0 did not \(hash [0-9a-f]+, kernel k_beta\)", text),
          f"images: each rank's image named: {text}")

    # a Python host's wait, named at its Python line
    script = os.path.join(tmp, "waits.py")
    with open(script, "w") as f:
        f.write("import ctypes\n"
                "cu = ctypes.CDLL('libcuda.so.1')\n"
                "P = ctypes.c_void_p\n"
                "dev, ctx, s = ctypes.c_int(), P(), P()\n"
                "assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0\n"
                "assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0\n"
                "assert cu.cuStreamCreate(ctypes.byref(s), 1) == 0\n"
                "def step():\n"
                "    return cu.cuStreamSynchronize(s)  # the line that waits\n"
                "print('rc', step())\n")
    p = subprocess.run([sys.executable, script], env=env_for(tmp, {"CAPGUARD_HANG_S": "1", "FAKECUDA_SYNC_BLOCK_MS": "2500"}),
                       capture_output=True, text=True, timeout=60)
    said = [l for l in p.stderr.splitlines() if "waits in cuStreamSynchronize" in l]
    check(p.returncode == 0 and len(said) == 1, f"python: the wait said once: {p.stderr}")
    check(bool(said) and re.search(r"called from \S*waits\.py:9 in step \(", said[0]) is not None,
          f"python: the wait named at the script's line 9 in step: {said}")

    # a native host's wait through libcudart, named at its own line
    rc, out, err = run(["cudart-sync"], tmp, {"CAPGUARD_HANG_S": "1"})
    said = [l for l in err.splitlines() if "waits in cuStreamSynchronize" in l]
    want = rf"called from hang_probe\(cudart_sync\+0x[0-9a-f]+\) at hang_probe\.c:{line_of('waits through')}\)"
    check(rc == 0 and len(said) == 1 and re.search(want, said[0]) is not None and "libcudart" not in said[0],
          f"native: the wait named at the program's line, past libcudart\n  want {want}\n  got  {said} {err}")

print("hang launches: " + ("ok" if not failures else f"{failures} failed"))
sys.exit(1 if failures else 0)
