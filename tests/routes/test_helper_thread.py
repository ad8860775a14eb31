"""A call that breaks a global capture from a helper thread (helper_thread_probe):
the thread named "ncclProxy-7" allocates from inside ncclCommInitRankConfig
while the main thread captures. The event names the thread ("thread_name")
and the communicator set-up ("nccl_setup") in the log and on stderr, and
`capguard report`'s first offender says both; the same call made by the
capturing thread itself has no thread_name (it is the capture's own) but is
still named as communicator set-up."""
import json
import os
import subprocess
import sys
import tempfile

SHIM = os.environ["CG_SHIM"]
FAKE_DIR = os.environ["CG_FAKE_DIR"]
PROBE = os.environ["CG_HELPER_THREAD_PROBE"]
CLI = os.environ["CG_CLI"]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


def run(args, tmp):
    log = os.path.join(tmp, "-".join(args or ["other"]) + ".jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env.update(LD_LIBRARY_PATH=FAKE_DIR, LD_PRELOAD=SHIM, CAPGUARD_MODE="report", CAPGUARD_LOG=log,
               CAPGUARD_PRIME=os.path.join(tmp, "p.cgp"), NO_COLOR="1")
    p = subprocess.run([PROBE] + args, env=env, capture_output=True, text=True, timeout=60)
    recs = [json.loads(l) for l in open(log) if l.strip()] if os.path.exists(log) else []
    return p, [r for r in recs if r.get("type") == "event"], log


with tempfile.TemporaryDirectory() as tmp:
    p, events, log = run([], tmp)
    check("alloc_result=900" in p.stdout and "end_result=901" in p.stdout, f"the helper's allocation broke the capture: {p.stdout}")
    allocs = [e for e in events if e.get("call") == "cuMemAlloc_v2"]
    check(len(allocs) == 1, f"one allocation event, not {len(allocs)}")
    e = allocs[0] if allocs else {}
    check(e.get("thread_name") == "ncclProxy-7", f"the event names the helper thread: {e.get('thread_name')}")
    check("ncclCommInitRankConfig" in (e.get("nccl_setup") or ""), f"the event names the set-up: {e.get('nccl_setup')}")
    check(f"made by thread {e.get('tid')} 'ncclProxy-7', not the capturing thread" in p.stderr,
          f"stderr names the helper thread: {p.stderr}")
    check("NCCL communicator set-up during capture (" in p.stderr, "stderr names the communicator set-up")
    rep = subprocess.run([CLI, "report", log], capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    check(f"thread {e.get('tid')} 'ncclProxy-7', not the capturing thread)" in rep.stdout,
          f"the report's first offender names the helper thread:\n{rep.stdout}")
    check("; NCCL communicator set-up during capture (" in rep.stdout, "the report's first offender names the set-up")

    p, events, log = run(["same"], tmp)
    allocs = [e for e in events if e.get("call") == "cuMemAlloc_v2"]
    check(len(allocs) == 1 and "thread_name" not in allocs[0], "the capturing thread's own call has no thread_name")
    check(len(allocs) == 1 and "ncclCommInitRankConfig" in allocs[0].get("nccl_setup", ""),
          "the capturing thread's call is named as set-up too")

print("helper thread: " + ("ok" if not failures else f"{failures} failed"))
sys.exit(1 if failures else 0)
