"""cuModuleLoadDataEx's options are never dropped: with the image primed, a
load with JIT options (max registers 32, wall time, log buffers) is not served
from the priming file's copy, which was loaded without them. On a driver that
allows loads during capture the caller gets the driver's own module (32
registers) and every output option written; on 12.2 (emulated) it is refused
as any unprimed load. A load without options is still served."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "routes"))
from routes_common import FAKE_DIR, SHIM  # noqa: E402

PROBE = os.environ["CG_JIT_PROBE"]
PTX = os.path.join(os.environ["CG_FAKE_DATA"], "kernels.ptx")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(how, prime, emulate=None):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.jsonl")
        env = dict(os.environ, LD_PRELOAD=SHIM, LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000",
                   CAPGUARD_MODE="guard", CAPGUARD_PRIME=prime, CAPGUARD_LOG=log)
        if emulate:
            env["CAPGUARD_EMULATE_DRIVER"] = emulate
        p = subprocess.run([PROBE, PTX, how], env=env, capture_output=True, text=True, timeout=60)
        vals = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
        recs = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
        return p, vals, recs


def verdicts(recs):
    return [r["verdict"] for r in recs if r["type"] == "event" and r["call"].startswith("cuModuleLoad")]


def summary(recs):
    return next((r for r in recs if r["type"] == "summary"), {})


with tempfile.TemporaryDirectory() as tmp:
    prime = os.path.join(tmp, "prime.cgp")
    # Learn: a plain load refused on emulated 12.2 records the image.
    p, v, recs = run("plain", prime, emulate="12020")
    check(v.get("load_result") == "900" and summary(recs).get("recorded") == 1,
          f"the image is recorded ({v}, {summary(recs).get('recorded')})")

    # Primed, 13.0: without options the load is served (32 would be the cap; 40 is the PTX's own count).
    p, v, recs = run("none", prime)
    check(v.get("load_result") == "0" and verdicts(recs) == ["served"],
          f"cuModuleLoadDataEx without options is served: {v} {verdicts(recs)}")

    # Primed, 13.0: with options the driver makes the module.
    p, v, recs = run("opts", prime)
    check(v.get("load_result") == "0" and v.get("end_result") == "0", f"load with options allowed: {v}")
    check("served" not in verdicts(recs), f"not served from the priming file: {verdicts(recs)}")
    check(v.get("regs") == "32", f"the module has the caller's register cap: regs={v.get('regs')} (want 32)")
    check(v.get("wall") not in (None, "-1") and float(v["wall"]) >= 0, f"CU_JIT_WALL_TIME written: {v.get('wall')}")
    check(v.get("info", "").startswith("fakecuda: module loaded") and v.get("info_len") == str(len(v.get("info", ""))),
          f"info log and its size written: {v.get('info')!r} {v.get('info_len')}")
    check(summary(recs).get("primed_served") == 0, "the summary serves nothing")

    # Primed, emulated 12.2: with options, refused like an unprimed load (the capture breaks).
    p, v, recs = run("opts", prime, emulate="12020")
    check(v.get("load_result") == "900" and "served" not in verdicts(recs),
          f"emulated 12.2: not served, refused as an unprimed load: {v} {verdicts(recs)}")
    check(v.get("wall") == "-1", "and nothing written into the caller's options")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
