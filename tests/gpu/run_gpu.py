#!/usr/bin/env python3
"""capguard against a real driver, torch and Triton (tests/gpu/triton_capture.py):
  1. a Triton kernel first launched inside torch.cuda.graph: the capture succeeds
     (driver >= 12.3 allows the load) and capguard's report names the kernel and
     the Python line that launched it; a warm kernel (control) gives no report;
  2. CAPGUARD_EMULATE_DRIVER=12020: run 1 fails with capguard's report naming the
     kernel; run 2 with the same priming file captures, and the replay is right;
     with CAPGUARD_RESCUE=1 the first run captures too;
  3. a warm kernel's module unloaded mid-capture breaks the capture without
     capguard (and in report mode), and not in guard mode (the unload is deferred);
  4. `capguard run` + `capguard report` on the first scenario;
  5. a multi-size start-up (tests/gpu/triton_startup.py: ten captures, a
     kernel only the captured path uses, specialisations compiled during
     capture, identical bytes loaded twice): `capguard prime learn` on this
     driver, then the emulated 12.2 driver captures every size on its first
     run (`capguard prime check`, and `capguard run --emulate-driver 12020`),
     and every replay is right; without the file the emulated run breaks;
  6. the same for CUlibrary loads (tests/gpu/library_capture.py: one cubin
     loaded twice with cuLibraryLoadData during capture, its kernels taken with
     cuLibraryGetKernel + cuKernelGetFunction and cuLibraryGetModule);
  7. calls that break a capture on every driver, in real torch programs
     (tests/gpu/capture_breakers.py), each run without capguard (LD_PRELOAD
     unset), with CAPGUARD_MODE=report and in guard mode (the default), with a
     log: a CuPy array created inside the capture (breaks without capguard;
     report mode breaks the same way and its log names the cuMemAlloc* call,
     the marked Python line and, as broken_by, the offender; guard mode without
     CAPGUARD_RESCUE still breaks and says so; with CAPGUARD_RESCUE=1 it
     survives, verdict rescued), a 256 MiB torch tensor created inside the
     capture (control: captures without capguard, no allocation event, since
     torch allocates in relaxed mode), a second thread polling query() on an
     event recorded inside the capture (breaks; report mode logs event-wait
     with driver_result 907; guard mode answers not-ready and survives, replay
     right), and an earlier CUDAGraph deleted inside a second capture (breaks;
     guard mode defers the cuGraphExecDestroy, replay right). The CuPy case is
     skipped, with the reason printed, where CuPy is not installed.
  8. the third matrix in real programs (tests/gpu/escape_capture.py), report
     mode, each also without capguard: a CuPy kernel on CuPy's default
     (legacy) stream inside torch.cuda.graph is reported as escaping the
     graph (verdict escaped) at its Python line, and the replays indeed do
     not run it; a capture on a blocking stream plus a torch kernel on the
     legacy stream is named (906) at its Python line; a wait on an event
     recorded before the capture is named (905); cuStreamWriteValue32_v2, a call
     capguard does not wrap, is named through the driver's log callback as
     the capture's first offender at its Python line; cuMemsetD8Async on the
     legacy stream is named by its wrapper (906); a copy from and one into
     pageable host memory inside torch.cuda.graph are said (pageable-copy)
     at their Python lines when captured, named when refused, and what the
     replay copied is printed.
  9. guard mode under races and odd ends (tests/gpu/guard_races.py):
     a watchdog thread started before the captures polls query() on a
     torch.cuda.Event recorded in each of 200 captures: 0 broken, replay
     right; an event recorded in a capture and destroyed mid-capture, its
     handle handed out again: the new event is answered by the driver (ready),
     not not-ready; a capture ended by another thread (908 global and
     thread-local, 0 relaxed; the own end then 401), ended with a NULL graph
     pointer, or its stream destroyed: capguard's count of open captures at
     exit (the summary's captures_open, absent when 0) is 0, the process carries on, and
     capguard never asks the driver about the destroyed stream (the driver
     segfaults when asked).
--only breakers runs section 7 alone, --only escapes section 8, --only guard section 9.
Exits 77 (skipped) with the reason when there is no GPU, torch or Triton."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_here  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "triton_capture.py")
KERNEL = "_capguard_first_launch_kernel"
VICTIM = "_capguard_victim_kernel"


def skip_reason():
    return gpu_here.skip_reason()


def launch_line():
    with open(SCRIPT) as f:
        for i, line in enumerate(f, 1):
            if "the launch a report must name" in line:
                return i
    raise RuntimeError("marker line missing")


class Runner:
    def __init__(self, build, out):
        self.shim = os.path.abspath(os.path.join(build, "shim", "libcapguard.so"))
        self.cli = os.path.abspath(os.path.join(build, "tools", "capguard"))
        self.out = out
        self.tmp = tempfile.mkdtemp(prefix="capguard-gpu-")
        self.passed = self.failed = 0

    def check(self, cond, what):
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        if cond:
            self.passed += 1
        else:
            self.failed += 1

    def run(self, name, scenario, shim=True, prime=None, **env_extra):
        log = os.path.join(self.tmp, name + ".jsonl")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for k in list(env):
            if k.startswith("CAPGUARD_"):
                del env[k]
        if shim:
            env["LD_PRELOAD"] = self.shim
            env["CAPGUARD_LOG"] = log
            env["CAPGUARD_PRIME"] = prime or os.path.join(self.tmp, name + ".cgp")
        env.update(env_extra)
        p = subprocess.run([sys.executable, SCRIPT, "--scenario", scenario], env=env, capture_output=True,
                           text=True, timeout=300)
        with open(os.path.join(self.out, name + ".txt"), "w") as f:
            f.write(f"$ {' '.join(f'{k}={v}' for k, v in env_extra.items())} scenario={scenario} shim={shim}\n")
            f.write(p.stdout + p.stderr)
        records = []
        if shim and os.path.exists(log):
            with open(log) as f:
                records = [json.loads(l) for l in f if l.strip()]
        result = [l for l in p.stdout.splitlines() if l.startswith("RESULT")]
        print(f"--- {name}: exit {p.returncode}; {result[0] if result else 'no RESULT line'}", flush=True)
        return p, [r for r in records if r.get("type") == "event"]


def ours(events, kernel):
    return [e for e in events if kernel in e.get("image", {}).get("kernels", [])]


STARTUP = os.path.join(HERE, "triton_startup.py")


def cli_run(r, name, argv):
    """capguard ARGV... with a clean environment; output kept under --out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env["PYTHONUNBUFFERED"] = "1"
    p = subprocess.run([r.cli] + argv, env=env, capture_output=True, text=True, timeout=600)
    with open(os.path.join(r.out, name + ".txt"), "w") as f:
        f.write("$ capguard " + " ".join(argv) + "\n" + p.stdout + p.stderr)
    print(f"--- {name}: capguard {' '.join(argv[:2])}: exit {p.returncode}", flush=True)
    return p


def events_of(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [e for e in (json.loads(l) for l in f if l.strip()) if e.get("type") == "event"]


LIBRARY = os.path.join(HERE, "library_capture.py")


def learn_then_check(r, name, script, done, twice_text):
    """prime learn SCRIPT on this driver; then without the file the emulated
    12.2 driver breaks; with it prime check passes and capguard run
    --emulate-driver 12020 captures on its first run, replays right."""
    py = [sys.executable, script]
    prime = os.path.join(r.tmp, name + ".cgp")
    learn_log = os.path.join(r.tmp, name + "_learn.jsonl")
    p = cli_run(r, name + "_learn", ["prime", "learn", "--prime", prime, "--log", learn_log, "--"] + py)
    print(p.stdout + p.stderr[-3000:])
    r.check(p.returncode == 0 and done in p.stdout, f"{name}, prime learn on this driver: captured, replays right")
    loads = [e for e in events_of(learn_log) if e["event"] == "module-load"]
    r.check(loads and all(e["verdict"] == "allowed" for e in loads),
            f"{name}, prime learn: {len(loads)} loads during capture, all allowed by this driver")
    hashes = [(e["pid"], e.get("image", {}).get("hash")) for e in loads]
    twice = sorted({h for h in hashes if h[1] and hashes.count(h) > 1})
    print(f"{name}: images loaded more than once during capture in one process: {twice}")
    r.check(bool(twice), f"{name}: identical image bytes loaded twice in one process")
    # learn's and check's verdicts are on stderr; stdout is the program's own
    r.check(twice_text in p.stderr, f"{name}: prime learn recorded them as '{twice_text}'")

    fresh = os.path.join(r.tmp, name + "_fresh.cgp")
    p = cli_run(r, name + "_emulated_nofile", ["run", "--emulate-driver", "12020", "--prime", fresh, "--log",
                                               os.path.join(r.tmp, name + "_nofile.jsonl"), "--"] + py)
    r.check(p.returncode == 1 and "capture=failed" in p.stdout,
            f"{name}, emulated 12.2 without the learned file: the capture breaks")

    with open(prime, "rb") as f:
        before = f.read()
    p = cli_run(r, name + "_check", ["prime", "check", "--prime", prime, "--"] + py)
    print(p.stdout + p.stderr[-2000:])
    r.check(p.returncode == 0 and "capguard prime check: ok:" in p.stderr,
            f"{name}, prime check (emulated 12.2): no load reached the driver during capture")
    r.check(done in p.stdout, f"{name}, prime check: captured, replays right")
    with open(prime, "rb") as f:
        r.check(f.read() == before, f"{name}: prime check left the priming file unchanged")

    log = os.path.join(r.tmp, name + "_emulated.jsonl")
    p = cli_run(r, name + "_emulated", ["run", "--emulate-driver", "12020", "--prime", prime, "--log", log, "--"] + py)
    served = [e for e in events_of(log) if e["event"] == "module-load"]
    r.check(p.returncode == 0 and done in p.stdout,
            f"{name}, emulated 12.2 with the learned file: captured on the first run, replays right")
    r.check(served and all(e["verdict"] == "served" for e in served),
            f"{name}, emulated 12.2: all {len(served)} loads during capture served from the file")
    print(p.stderr[-1500:])


def startup(r, out):
    learn_then_check(r, "startup", STARTUP, "RESULT captured=10/10 replay=correct", "2 modules")
    learn_then_check(r, "library", LIBRARY, "RESULT library capture=ok replay=correct", "2 libraries")


BREAKERS = os.path.join(HERE, "capture_breakers.py")
ALLOC_MARK = "the allocation a report must name"


def marker_line(script, marker):
    with open(script) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise RuntimeError(f"marker line missing in {script}")


def run_breaker(r, name, scenario, mode, **env_extra):
    """tests/gpu/capture_breakers.py SCENARIO: mode None = without capguard
    (LD_PRELOAD unset), "report" = CAPGUARD_MODE=report, "guard" = the
    default (CAPGUARD_MODE unset), both with CAPGUARD_LOG. Returns the RESULT
    line's keys, the exit status, the ERROR lines, the log's events and its
    capture records."""
    log = os.path.join(r.tmp, name + ".jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_") and k != "LD_PRELOAD"}
    env["PYTHONUNBUFFERED"] = "1"
    if mode is not None:
        env["LD_PRELOAD"] = r.shim
        env["CAPGUARD_LOG"] = log
        env["CAPGUARD_PRIME"] = os.path.join(r.tmp, name + ".cgp")
        if mode != "guard":
            env["CAPGUARD_MODE"] = mode
    env.update(env_extra)
    p = subprocess.run([sys.executable, BREAKERS, scenario], env=env, capture_output=True, text=True, timeout=300)
    with open(os.path.join(r.out, name + ".txt"), "w") as f:
        shown = " ".join(f"{k}={v}" for k, v in env.items() if k.startswith("CAPGUARD_") or k == "LD_PRELOAD")
        f.write(f"$ {shown} python capture_breakers.py {scenario}\nexit {p.returncode}\n{p.stdout}{p.stderr}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    res = dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv) if lines else {}
    errors = [l for l in p.stdout.splitlines() if l.startswith("ERROR ")]
    records = []
    if mode is not None and os.path.exists(log):
        with open(log) as f:
            records = [json.loads(l) for l in f if l.strip()]
    events = [e for e in records if e.get("type") == "event"]
    captures = [c for c in records if c.get("type") == "capture"]
    print(f"--- {name}: exit {p.returncode}; {lines[-1] if lines else 'no RESULT line'}", flush=True)
    for l in errors:
        print("    " + l[:300])
    if not lines:
        print(p.stdout[-2000:] + p.stderr[-3000:])
    for e in events:
        print(f"    event {e.get('event')} {e.get('call')} verdict={e.get('verdict')} result={e.get('result')} "
              f"driver_result={e.get('driver_result')} tid={e.get('tid')}")
    for c in captures:
        print(f"    capture {c.get('id')} status={c.get('status')} end_result={c.get('end_result')} "
              f"broken_by={json.dumps(c.get('broken_by')) if 'broken_by' in c else '-'}")
    return {"res": res, "rc": p.returncode, "errors": errors, "events": events, "captures": captures, "log": log}


def broken(run):
    return [c for c in run["captures"] if c.get("status") in ("failed", "invalidated")]


def captured(run):
    return run["res"].get("captured")


def breakers(r):
    """Calls that break a capture on every driver, in real torch programs
    (tests/gpu/capture_breakers.py), each run without capguard, in report
    mode and in guard mode."""
    # scenario: (event kind, is the offending call, breaks without capguard, guard verdict when fixed)
    cases = [
        ("cupy_alloc", "allocation", lambda c: c.startswith("cuMemAlloc"), True, None),
        ("torch_pool_growth", "allocation", None, False, None),
        ("watchdog_query", "event-wait", lambda c: c.startswith("cuEventQuery"), True, "not-ready"),
        ("graph_exec_destroy", "graph-exec-destroy", lambda c: c == "cuGraphExecDestroy", True, "deferred-destroy"),
        # nothing to fix: the memory is the program's; guard mode reports as report mode does
        ("host_unregister", "free", lambda c: c == "cuMemHostUnregister", True, "unfixed"),
    ]
    try:
        import importlib.util
        have_cupy = importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        have_cupy = False
    alloc_line = marker_line(BREAKERS, ALLOC_MARK)
    for scenario, kind, is_offender, breaks, fixed in cases:
        if scenario == "cupy_alloc" and not have_cupy:
            print(f"SKIP {scenario}: cupy is not installed for {sys.executable} (pip install cupy-cuda13x); "
                  "its checks are not run", flush=True)
            continue
        plain = run_breaker(r, f"{scenario}_plain", scenario, None)
        report = run_breaker(r, f"{scenario}_report", scenario, "report")
        guard = run_breaker(r, f"{scenario}_guard", scenario, "guard")
        want = "0" if breaks else "1"
        r.check(captured(plain) == want, f"{scenario} without capguard: the capture {'breaks' if breaks else 'succeeds'}")
        if not breaks:
            r.check(plain["res"].get("replay_ok") == "1", f"{scenario} without capguard: the replay is right")
        r.check(captured(report) == captured(plain) and captured(report) is not None,
                f"{scenario}, report mode: the same outcome as without capguard (captured={captured(report)})")
        mine = [e for e in report["events"] if e.get("event") == kind]
        if not breaks:
            for run, how in ((report, "report"), (guard, "guard")):
                r.check(not [e for e in run["events"] if e.get("event") == "allocation"],
                        f"{scenario}, {how} mode: no allocation event (torch allocates in relaxed mode)")
                r.check(captured(run) == "1" and run["res"].get("replay_ok") == "1" and not broken(run),
                        f"{scenario}, {how} mode: captured, replay right")
            continue
        r.check(bool(mine) and all(is_offender(e.get("call", "")) and e.get("verdict") == "refused" for e in mine),
                f"{scenario}, report mode: the log names the call ({kind}: "
                f"{sorted({e.get('call') for e in mine}) or 'none'}, verdict refused)")
        if scenario == "watchdog_query":
            r.check(any(e.get("driver_result") == 907 for e in mine),
                    f"{scenario}, report mode: an event-wait event with driver_result 907")
        if scenario == "cupy_alloc":
            frames = [f for e in mine for f in e.get("python_stack", [])]
            r.check(any(f.get("file", "").endswith("capture_breakers.py") and f.get("line") == alloc_line
                        for f in frames),
                    f"{scenario}, report mode: the event's python_stack names capture_breakers.py:{alloc_line}")
        for run, how in ((report, "report"),) + (((guard, "guard"),) if fixed in (None, "unfixed") else ()):
            caps = broken(run)
            r.check(bool(caps) and all((c.get("broken_by") or {}).get("event") == kind
                                       and is_offender((c.get("broken_by") or {}).get("call", "")) for c in caps),
                    f"{scenario}, {how} mode: every broken capture's broken_by names the offender "
                    f"({[(c.get('broken_by') or {}).get('call') for c in caps]})")
        if fixed == "unfixed":
            mine = [e for e in guard["events"] if e.get("event") == kind]
            r.check(captured(guard) == "0" and bool(mine)
                    and all(e.get("verdict") == "refused" and is_offender(e.get("call", "")) for e in mine),
                    f"{scenario}, guard mode: still breaks (nothing to fix), reported as refused "
                    f"({[(e.get('call'), e.get('verdict')) for e in mine]})")
            continue
        if fixed is None:
            # cupy_alloc: guard mode without rescue still breaks and says so; with rescue it survives
            mine = [e for e in guard["events"] if e.get("event") == kind]
            r.check(captured(guard) == "0" and bool(mine) and all(e.get("verdict") == "refused" for e in mine),
                    f"{scenario}, guard mode without CAPGUARD_RESCUE: still breaks, reported as refused")
            rescue = run_breaker(r, f"{scenario}_rescue", scenario, "guard", CAPGUARD_RESCUE="1")
            mine = [e for e in rescue["events"] if e.get("event") == kind]
            r.check(captured(rescue) == "1" and rescue["res"].get("replay_ok") == "1" and not broken(rescue),
                    f"{scenario}, CAPGUARD_RESCUE=1: the capture survives, replay right")
            r.check(bool(mine) and all(e.get("verdict") == "rescued" and is_offender(e.get("call", "")) for e in mine),
                    f"{scenario}, CAPGUARD_RESCUE=1: verdict rescued ({[e.get('verdict') for e in mine]})")
            continue
        mine = [e for e in guard["events"] if e.get("event") == kind]
        r.check(captured(guard) == "1" and guard["res"].get("replay_ok") == "1" and not broken(guard),
                f"{scenario}, guard mode: the capture survives, replay right")
        r.check(bool(mine) and all(e.get("verdict") == fixed and is_offender(e.get("call", "")) for e in mine),
                f"{scenario}, guard mode: verdict {fixed} ({[e.get('verdict') for e in mine]})")
        if scenario == "watchdog_query":
            r.check(guard["res"].get("query_error") == "0",
                    f"{scenario}, guard mode: the watchdog's query() raised nothing "
                    f"(queries={guard['res'].get('queries')}, ready={guard['res'].get('ready')})")


ESCAPES = os.path.join(HERE, "escape_capture.py")


def run_escape(r, name, scenario, shim):
    log = os.path.join(r.tmp, name + ".jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_") and k != "LD_PRELOAD"}
    env["PYTHONUNBUFFERED"] = "1"
    if shim:
        env.update(LD_PRELOAD=r.shim, CAPGUARD_LOG=log, CAPGUARD_MODE="report",
                   CAPGUARD_PRIME=os.path.join(r.tmp, name + ".cgp"))
    p = subprocess.run([sys.executable, ESCAPES, scenario], env=env, capture_output=True, text=True, timeout=120)
    with open(os.path.join(r.out, name + ".txt"), "w") as f:
        f.write(f"$ shim={shim} python escape_capture.py {scenario}\nexit {p.returncode}\n{p.stdout}{p.stderr}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    res = dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv) if lines else {}
    records = []
    if shim and os.path.exists(log):
        with open(log) as f:
            records = [json.loads(l) for l in f if l.strip()]
    print(f"--- {name}: exit {p.returncode}; {lines[-1] if lines else 'no RESULT line'}", flush=True)
    if not lines:
        print(p.stdout[-2000:] + p.stderr[-3000:])
    events = [e for e in records if e.get("type") == "event"]
    captures = [c for c in records if c.get("type") == "capture"]
    for e in events:
        print(f"    event {e.get('event')} {e.get('call')} verdict={e.get('verdict')} result={e.get('result')}")
    for c in captures:
        print(f"    capture {c.get('id')} status={c.get('status')} end_result={c.get('end_result')} "
              f"broken_by={json.dumps(c.get('broken_by')) if 'broken_by' in c else '-'}")
    return {"rc": p.returncode, "res": res, "events": events, "captures": captures}


def escapes(r):
    """Section 8: what escapes a capture, and the third matrix's breaks, named at their Python lines."""
    try:
        import importlib.util
        have_cupy = importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        have_cupy = False
    py = "escape_capture.py"

    def at_line(frames, line):
        return any(f.get("file", "").endswith(py) and f.get("line") == line for f in frames)

    if not have_cupy:
        print(f"SKIP cupy_escape: cupy is not installed for {sys.executable}; its checks are not run", flush=True)
    else:
        line = marker_line(ESCAPES, "CAPGUARD-MARK escape")
        plain = run_escape(r, "cupy_escape_plain", "cupy_escape", False)
        rep = run_escape(r, "cupy_escape_report", "cupy_escape", True)
        for run, how in ((plain, "without capguard"), (rep, "report mode")):
            res = run["res"]
            r.check(res.get("captured") == "1" and res.get("cupy_after_capture") == "1.0"
                    and res.get("cupy_after_replays") == "1.0" and res.get("torch_after_replays") == "4.0",
                    f"cupy_escape {how}: captured; the CuPy kernel ran once at capture, in no replay ({res})")
        mine = [e for e in rep["events"] if e.get("event") == "legacy-stream"]
        r.check(len(mine) >= 1 and all(e.get("verdict") == "escaped" and e.get("call", "").startswith("cuLaunch")
                                       for e in mine),
                f"cupy_escape: reported as escaping the graph ({[(e.get('call'), e.get('verdict')) for e in mine]})")
        r.check(any(at_line(e.get("python_stack", []), line) for e in mine),
                f"cupy_escape: the event's python_stack names {py}:{line}")

    cases = [("legacy_906", "CAPGUARD-MARK 906", lambda c: c.startswith("cuLaunch"), 906, "legacy-stream"),
             ("wait_905", "CAPGUARD-MARK 905", lambda c: c.startswith("cuStreamWaitEvent"), 905, "stream-wait"),
             ("unwrapped_log", "CAPGUARD-MARK unwrapped", lambda c: c.startswith("cuStreamWriteValue32"), 906,
              "driver-log"),
             ("copy_906", "CAPGUARD-MARK copy906", lambda c: c == "cuMemsetD8Async", 906, "legacy-stream")]
    for scenario, mark, is_call, code, kind in cases:
        line = marker_line(ESCAPES, mark)
        plain = run_escape(r, scenario + "_plain", scenario, False)
        rep = run_escape(r, scenario + "_report", scenario, True)
        r.check(plain["res"].get("captured") == "0" and plain["res"].get("end_result") == "901",
                f"{scenario} without capguard: the capture breaks (end {plain['res'].get('end_result')})")
        r.check(rep["res"].get("captured") == "0" and rep["res"].get("end_result") == "901",
                f"{scenario} report mode: the same outcome (end {rep['res'].get('end_result')})")
        caps = [c for c in rep["captures"] if c.get("status") == "failed"]
        b = [c.get("broken_by") or {} for c in caps]
        r.check(bool(caps) and all(is_call(x.get("call", "")) and x.get("result") == code and x.get("event") == kind
                                   for x in b),
                f"{scenario}: the broken capture's first offender is named ({b})")
        r.check(bool(caps) and all(f"{py}:{line} " in x.get("python", "") for x in b),
                f"{scenario}: at its Python line {py}:{line} ({[x.get('python') for x in b]})")

    # A copy between device memory and pageable host memory captured by
    # torch.cuda.graph: whatever the driver does, capguard changes nothing;
    # captured, it says pageable-copy (escaped) at the Python line; refused,
    # the capture's first offender is that copy. What the replay read or
    # wrote is printed (the measurement).
    for scenario, mark, call in (("pageable_htod", "CAPGUARD-MARK pageable-htod", "cuMemcpyHtoDAsync_v2"),
                                 ("pageable_dtoh", "CAPGUARD-MARK pageable-dtoh", "cuMemcpyDtoHAsync_v2")):
        line = marker_line(ESCAPES, mark)
        plain = run_escape(r, scenario + "_plain", scenario, False)
        rep = run_escape(r, scenario + "_report", scenario, True)
        keys = ("captured", "call_result", "dev_after_capture", "host_after_capture", "dev_after_replay",
                "host_after_replay")
        r.check(bool(plain["res"]) and all(plain["res"].get(k) == rep["res"].get(k) for k in keys),
                f"{scenario}: report mode sees what the program sees without capguard "
                f"({ {k: plain['res'].get(k) for k in keys} } / { {k: rep['res'].get(k) for k in keys} })")
        if scenario == "pageable_htod":
            r.check(plain["res"].get("captured") == "1" and plain["res"].get("call_result") == "0",
                    f"{scenario}: captured, as the third matrix measured ({plain['res']})")
        mine = [e for e in rep["events"] if e.get("call") == call]
        if rep["res"].get("captured") == "1" and rep["res"].get("call_result") == "0":
            r.check(len(mine) == 1 and mine[0].get("event") == "pageable-copy" and mine[0].get("verdict") == "escaped"
                    and at_line(mine[0].get("python_stack", []), line),
                    f"{scenario}: said (pageable-copy, escaped) at {py}:{line} "
                    f"({[(e.get('event'), e.get('verdict')) for e in mine]})")
        else:
            b = [c.get("broken_by") or {} for c in rep["captures"] if c.get("status") == "failed"]
            r.check(bool(b) and all(x.get("call") == call for x in b),
                    f"{scenario}: refused by the driver, and named as the first offender ({b})")


RACES = os.path.join(HERE, "guard_races.py")


def run_race(r, name, args):
    """tests/gpu/guard_races.py ARGS in guard mode (the default) with a log:
    the RESULT line's keys, the exit status, the log's records."""
    log = os.path.join(r.tmp, name + ".jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_") and k != "LD_PRELOAD"}
    env.update(PYTHONUNBUFFERED="1", LD_PRELOAD=r.shim, CAPGUARD_LOG=log,
               CAPGUARD_PRIME=os.path.join(r.tmp, name + ".cgp"))
    t0 = time.time()
    p = subprocess.run([sys.executable, RACES] + args, env=env, capture_output=True, text=True, timeout=300)
    with open(os.path.join(r.out, name + ".txt"), "w") as f:
        f.write(f"$ LD_PRELOAD={r.shim} python guard_races.py {' '.join(args)}\nexit {p.returncode}\n"
                f"{p.stdout}{p.stderr}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    res = dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv) if lines else {}
    records = []
    if os.path.exists(log):
        with open(log) as f:
            records = [json.loads(l) for l in f if l.strip()]
    print(f"--- {name}: exit {p.returncode} in {time.time() - t0:.1f} s; {lines[-1] if lines else 'no RESULT line'}",
          flush=True)
    for l in p.stdout.splitlines():
        if l.startswith("ERROR "):
            print("    " + l[:300])
    if not lines or p.returncode:
        print(p.stdout[-2000:] + p.stderr[-3000:])
    summary = [x for x in records if x.get("type") == "summary"]
    return {"res": res, "rc": p.returncode, "records": records, "summary": summary[0] if summary else {},
            "stderr": p.stderr}


def guard_races(r):
    """Attacks 1, 2 and 4 of docs/reliability.md, with real torch and the real driver."""
    w = run_race(r, "race_watchdog", ["watchdog", "200"])
    res = w["res"]
    r.check(w["rc"] == 0 and res.get("captures") == "200" and res.get("broken") == "0",
            f"watchdog: a thread polling a torch.cuda.Event recorded in each capture, 200 captures, 0 broken "
            f"(broken={res.get('broken')}, queries={res.get('queries')}, not ready={res.get('not_ready')})")
    r.check(res.get("errors_are_drivers") == "1" and res.get("replay_ok") == "1",
            f"watchdog: no query raised an error but the driver's own answer for an event last recorded in an "
            f"ended capture ({res.get('query_errors')} such), and the last graph replays right")
    r.check(int(res.get("not_ready", "0")) > 0, "watchdog: the poller met captured events (answered not ready)")
    r.check(w["summary"].get("captures_broken") == 0 and
            not [e for e in w["records"] if e.get("type") == "event" and e.get("driver_result") in (900, 907)],
            "watchdog: no query reached the driver to be refused (log)")

    u = run_race(r, "race_reuse", ["reuse"])
    res = u["res"]
    if res.get("reused") != "1":
        print(f"NOTE reuse: the driver did not hand the destroyed event's handle out again in {res.get('creates')} creates; "
              "the check below then only shows a new event is answered by the driver")
    r.check(u["rc"] == 0 and res.get("query_result") == "0" and res.get("replay_ok") == "1",
            f"reused event handle: answered by the driver (ready), not not-ready "
            f"(query_result={res.get('query_result')}, reused={res.get('reused')})")

    for mode, want in (("global", "908"), ("thread-local", "908"), ("relaxed", "0")):
        e = run_race(r, "race_wrongend_" + mode, ["wrongend", mode])
        res = e["res"]
        r.check(e["rc"] == 0 and res.get("other_end") == want and res.get("own_end") == "401" and
                res.get("works_after") == "1",
                f"wrong-thread end, {mode}: another thread's end returns {want}, the own end 401 "
                f"(got {res.get('other_end')}, {res.get('own_end')})")
        r.check(e["summary"].get("captures_open", 0) == 0 and bool(e["summary"]),
                f"wrong-thread end, {mode}: capguard's count of open captures at exit is 0 "
                f"(captures_open={e['summary'].get('captures_open', 0)}, summary present={bool(e['summary'])})")
    n = run_race(r, "race_nullend", ["nullend"])
    r.check(n["rc"] == 0 and n["res"].get("null_end") == "0" and n["res"].get("end_again") == "401" and
            n["summary"].get("captures_open", 0) == 0 and bool(n["summary"]),
            f"end with a NULL graph pointer: 0, then 401; captures_open 0 (got {n['res']})")
    d = run_race(r, "race_destroy", ["destroy"])
    r.check(d["rc"] == 0 and d["res"].get("destroy_result") == "0" and d["res"].get("end2") == "0" and
            d["summary"].get("captures_open", 0) == 0 and bool(d["summary"]),
            f"capturing stream destroyed: no crash (capguard never asks about it), captures_open 0 "
            f"(exit {d['rc']}, {d['res']})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=tempfile.gettempdir())
    ap.add_argument("--only", choices=["all", "breakers", "escapes", "guard"], default="all",
                    help="breakers: only the capture breakers (7.); escapes: only the third matrix (8.); "
                         "guard: only races and odd ends (9.)")
    args = ap.parse_args()
    reason = skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        return 77
    os.makedirs(args.out, exist_ok=True)
    r = Runner(args.build, args.out)
    if args.only in ("breakers", "escapes", "guard"):
        {"breakers": breakers, "escapes": escapes, "guard": guard_races}[args.only](r)
        print(f"{r.passed} passed, {r.failed} failed")
        return 0 if r.failed == 0 else 1
    line = launch_line()

    # 1. first launch inside capture, real driver
    p, ev = r.run("first_launch", "first-launch")
    mine = ours(ev, KERNEL)
    r.check(p.returncode == 0, "first launch in capture: capture succeeds under capguard")
    r.check(len(mine) == 1 and mine[0]["verdict"] == "allowed", "report: the load was allowed by this driver")
    frames = mine[0]["python_stack"] if mine else []
    r.check(any(f["file"].endswith("triton_capture.py") and f["line"] == line for f in frames),
            f"report names the Python line that launched it (triton_capture.py:{line})")
    r.check(KERNEL in p.stderr, "stderr report names the kernel")
    print("\n".join(l for l in p.stderr.splitlines() if "capguard" in l or l.startswith("  "))[:6000])
    p, ev = r.run("warm", "warm")
    r.check(p.returncode == 0 and not ours(ev, KERNEL), "warm kernel (control): capture succeeds, no report")

    # 2. emulated 12.2 driver: run 1 fails, run 2 primed succeeds
    prime = os.path.join(r.tmp, "emulated.cgp")
    p, ev = r.run("emulate_run1", "first-launch", prime=prime, CAPGUARD_EMULATE_DRIVER="12020")
    mine = ours(ev, KERNEL)
    r.check(p.returncode == 1, "emulated 12.2, run 1: the capture fails")
    r.check(len(mine) == 1 and mine[0]["verdict"] == "emulated", "run 1: capguard's report names the kernel")
    p, ev = r.run("emulate_run2", "first-launch", prime=prime, CAPGUARD_EMULATE_DRIVER="12020")
    mine = ours(ev, KERNEL)
    r.check(p.returncode == 0 and "replay=correct" in p.stdout, "run 2: captures, replay gives the right numbers")
    r.check(len(mine) == 1 and mine[0]["verdict"] == "served", "run 2: the load was served from the priming file")
    p, ev = r.run("rescue", "first-launch", CAPGUARD_EMULATE_DRIVER="12020", CAPGUARD_RESCUE="1")
    r.check(p.returncode == 0 and [e["verdict"] for e in ours(ev, KERNEL)] == ["rescued"],
            "rescue: the load made in relaxed mode, capture succeeds")

    # 3. unload mid-capture
    p, _ = r.run("unload_plain", "unload", shim=False)
    r.check(p.returncode == 1, "unload mid-capture without capguard: the capture breaks")
    p, ev = r.run("unload_report", "unload", CAPGUARD_MODE="report")
    r.check(p.returncode == 1 and [e["verdict"] for e in ev if e["event"] == "module-unload"] == ["refused"],
            "report mode: behaves as without capguard, and says why")
    p, ev = r.run("unload_guard", "unload")
    r.check(p.returncode == 0 and "replay=correct" in p.stdout, "guard mode: the capture survives the unload")
    r.check([e["verdict"] for e in ev if e["event"] == "module-unload"] == ["deferred"], "guard mode: unload deferred")

    # 4. the CLI
    log = os.path.join(r.tmp, "cli.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    p = subprocess.run([r.cli, "run", "--log", log, "--prime", os.path.join(r.tmp, "cli.cgp"), "--", sys.executable,
                        SCRIPT, "--scenario", "first-launch"], env=env, capture_output=True, text=True, timeout=300)
    print("--- capguard run -- python tests/gpu/triton_capture.py --scenario first-launch")
    print(p.stdout + p.stderr)
    r.check(p.returncode == 0, "capguard run: exits with the script's status")
    p = subprocess.run([r.cli, "report", log], capture_output=True, text=True, timeout=60)
    print("--- capguard report")
    print(p.stdout + p.stderr)
    r.check(KERNEL in p.stdout, "capguard report names the kernel")
    with open(os.path.join(args.out, "cli_report.txt"), "w") as f:
        f.write(p.stdout)

    startup(r, args.out)

    breakers(r)
    escapes(r)
    guard_races(r)

    print(f"{r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
