#!/usr/bin/env python3
"""The hang watch's cases on two GPUs (docs/hangs.md), one command:

  python3 tests/gpu/run_hang_cases.py --build build [--out DIR] [--only CASE]

Each case is two ranks started by torchrun under `capguard run` with
CAPGUARD_HANG_S set (tests/gpu/hang_case_rank.py), bounded by a timeout
after which what is left is killed (a hang is what some cases make):
  (a) skip: rank 1 skips a collective that rank 0 replays in a graph; the
      report names rank 1 as the rank behind, rank 0 as waiting in its 4th
      launch, and the graph (its capture site in hang_case_rank.py);
  (b) busy: rank 0 runs its own long kernel in a graph; it is named busy,
      and no rank is named behind;
  (c) teardown: destroy_process_group with the collective graph alive; the
      teardown held by live graphs is said with the fix; then the same with
      the graphs reset first (the fix) ends, with no exec alive at exit;
  (d) healthy: a tensor-parallel step replayed 3000 times with the watcher on
      and off (ABAB); silent with it on, and its replays a second within 2%.
Prints PASS/FAIL per check, writes DIR/hang_cases.json with the figures,
and exits 0 when every check passed, 1 otherwise, 77 without two GPUs."""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_here  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RANK = os.path.join(HERE, "hang_case_rank.py")
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
HANG_S = 3


class Checks:
    def __init__(self):
        self.passed = self.failed = 0
        self.results = []

    def __call__(self, case, cond, what):
        print(("PASS " if cond else "FAIL ") + f"({case}) {what}", flush=True)
        self.passed += bool(cond)
        self.failed += not cond
        self.results.append({"case": case, "check": what, "ok": bool(cond)})


def run_ranks(cli, tmp, name, extra, limit_s, stop_when=None, grace_s=0.0):
    """torchrun's two ranks under capguard run; killed (the whole session)
    at limit_s, or grace_s after stop_when(output so far) is true."""
    log = os.path.join(tmp, name + ".jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "CG_HANG_"))}
    env.update(NO_MULTICAST, PYTHONUNBUFFERED="1", TORCH_NCCL_ASYNC_ERROR_HANDLING="0")
    env.update(extra)
    argv = [cli, "run", "--log", log, "--", sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node=2", RANK]
    out_path, err_path = os.path.join(tmp, name + ".out"), os.path.join(tmp, name + ".err")
    t0 = time.monotonic()
    with open(out_path, "w") as fo, open(err_path, "w") as fe:
        p = subprocess.Popen(argv, env=env, stdout=fo, stderr=fe, text=True, start_new_session=True)
        killed, stop_at = False, None
        while p.poll() is None:
            time.sleep(0.2)
            now = time.monotonic() - t0
            if stop_when and stop_at is None and stop_when(open(out_path).read()):
                stop_at = now + grace_s
            if now > limit_s or (stop_at is not None and now > stop_at):
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                killed = True
    took = time.monotonic() - t0
    out, err = open(out_path).read(), open(err_path).read()
    return {"log": log, "out": out, "err": err, "killed": killed, "took_s": round(took, 1), "rc": p.returncode}


def report(cli, log, *flags):
    p = subprocess.run([cli, "report", *flags, log], capture_output=True, text=True, timeout=120)
    return p.stdout + p.stderr


def events(log, kind=None):
    evs = []
    if os.path.exists(log):
        for line in open(log, errors="replace"):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") == "event" and (kind is None or r.get("event") == kind):
                evs.append(r)
    return evs


def case_skip(cli, tmp, check, figures):
    r = run_ranks(cli, tmp, "skip", {"CAPGUARD_HANG_S": str(HANG_S), "CG_HANG_CASE": "skip", "CG_HANG_HOLD_S": "10"},
                  limit_s=90, stop_when=lambda out: "skipped_at=4" in out, grace_s=3)
    rep = report(cli, r["log"])
    print(rep)
    hung = events(r["log"], "hang-launch")
    figures["skip"] = {"took_s": r["took_s"], "killed": r["killed"], "hang_launch_events": len(hung),
                       "launch_count_events": len(events(r["log"], "launch-count"))}
    check("a", any(e["hang"]["launches"] == 4 and e["hang"]["collectives"] >= 1 for e in hung),
          "rank 0's 4th launch of the all_reduce graph said not finished, with its collective")
    check("a", re.search(r"rank 0 waits in its launch 4, for rank 1, which is behind", rep) is not None,
          "the report names rank 1 as the rank behind and rank 0 waiting in its 4th launch")
    check("a", re.search(r"graph captured at \S*hang_case_rank\.py:\d+", rep) is not None,
          "the report names the graph by its capture line in hang_case_rank.py")
    check("a", r["took_s"] < 90, f"bounded: ended or killed in {r['took_s']} s")


def case_busy(cli, tmp, check, figures):
    r = run_ranks(cli, tmp, "busy", {"CAPGUARD_HANG_S": "2", "CG_HANG_CASE": "busy", "CG_HANG_HOLD_S": "7"},
                  limit_s=90)
    rep = report(cli, r["log"])
    print(rep)
    figures["busy"] = {"took_s": r["took_s"], "killed": r["killed"], "rc": r["rc"]}
    check("b", re.search(r"rank 0 is busy in launch 1 of the graph captured at \S*hang_case_rank\.py:\d+", rep)
          is not None, "rank 0 named busy in its own graph")
    check("b", "which is behind" not in rep, "no rank named behind (rank 0 is not the culprit)")
    check("b", r["out"].count("ok=1") == 2 and not r["killed"], "both ranks finished")


def case_teardown(cli, tmp, check, figures):
    r = run_ranks(cli, tmp, "teardown", {"CAPGUARD_HANG_S": str(HANG_S), "CG_HANG_CASE": "teardown"},
                  limit_s=90, stop_when=lambda out: out.count("destroying=1") == 2, grace_s=4 * HANG_S)
    rep = report(cli, r["log"])
    print(rep)
    said = events(r["log"], "hang-teardown")
    figures["teardown"] = {"took_s": r["took_s"], "held": r["out"].count("destroyed=1") < 2,
                           "hang_teardown_events": len(said)}
    print(r["err"][-3000:])
    check("c", r["out"].count("destroyed=1") < 2, "destroy_process_group with the graph alive is held (as without capguard)")
    check("c", bool(said) or "holding collectives" in r["err"],
          "the teardown held by live graphs is said (stderr or the log)")
    check("c", "reset or delete them" in r["err"] + rep and "destroy_process_group" in r["err"] + rep,
          "the fix is said (reset or delete the graphs before destroy_process_group)")
    f = run_ranks(cli, tmp, "teardown_fixed", {"CAPGUARD_HANG_S": str(HANG_S), "CG_HANG_CASE": "teardown",
                                                "CG_HANG_FIX": "1"}, limit_s=90)
    figures["teardown_fixed"] = {"took_s": f["took_s"], "killed": f["killed"]}
    check("c", f["out"].count("destroyed=1") == 2 and not f["killed"], "with the graphs reset first, the teardown ends")
    check("c", "holding collectives still alive" not in f["err"], "and no exec holding collectives is alive at exit")


def case_healthy(cli, tmp, check, figures):
    rates = {"on": [], "off": []}
    errs = []
    for i, mode in enumerate(["on", "off", "on", "off"]):
        extra = {"CG_HANG_CASE": "healthy", "CG_HANG_REPLAYS": "3000"}
        if mode == "on":
            extra["CAPGUARD_HANG_S"] = "5"  # a healthy run's start-up waits (NCCL's set-up) stay under it
        r = run_ranks(cli, tmp, f"healthy_{i}_{mode}", extra, limit_s=120)
        per_s = [float(m) for m in re.findall(r"per_s=([0-9.]+)", r["out"])]
        if len(per_s) == 2:
            rates[mode].append(min(per_s))
        if mode == "on":
            errs.append(r["err"])
            loud = [e for e in events(r["log"]) if e.get("event", "").startswith("hang-")]
            check("d", not loud, f"run {i}: no hang event in the log with the watcher on ({len(loud)})")
    on, off = (statistics.median(rates[m]) if rates[m] else 0.0 for m in ("on", "off"))
    ratio = on / off if off else 0.0
    figures["healthy"] = {"replays_per_s_on": rates["on"], "replays_per_s_off": rates["off"], "ratio": round(ratio, 4)}
    said = [l for e in errs for l in e.splitlines() if "has not finished" in l or "waits in" in l]
    check("d", not said, "silent on stderr with the watcher on")
    check("d", len(rates["on"]) == 2 and len(rates["off"]) == 2, "every run replayed (two ranks each)")
    check("d", ratio >= 0.98, f"replays a second with the watcher {on:.0f} vs without {off:.0f}: ratio {ratio:.4f} (>= 0.98)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", choices=["skip", "busy", "teardown", "healthy"])
    args = ap.parse_args()
    reason = gpu_here.skip_reason(triton=False, gpus=2, nccl=True)
    if reason:
        print(f"SKIP: {reason}")
        return 77
    cli = os.path.abspath(os.path.join(args.build, "tools", "capguard"))
    tmp = tempfile.mkdtemp(prefix="capguard-hang-cases-")
    out = args.out or tmp
    os.makedirs(out, exist_ok=True)
    check, figures = Checks(), {}
    t0 = time.monotonic()
    cases = {"skip": case_skip, "busy": case_busy, "teardown": case_teardown, "healthy": case_healthy}
    for name, fn in cases.items():
        if args.only and name != args.only:
            continue
        print(f"== {name}", flush=True)
        try:
            fn(cli, tmp, check, figures)
        except Exception as e:  # a case that breaks is a failure, the others still run
            check(name, False, f"the case ran ({type(e).__name__}: {e})")
    figures["total_s"] = round(time.monotonic() - t0, 1)
    figures["checks"] = check.results
    path = os.path.join(out, "hang_cases.json")
    with open(path, "w") as f:
        json.dump(figures, f, indent=1)
    print(f"figures: {path} (logs in {tmp})")
    print(f"{check.passed} passed, {check.failed} failed")
    return 0 if check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
