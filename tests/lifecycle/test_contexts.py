"""Priming across contexts: modules and pools live and die with their context.
On 12.2 (the fake driver's, and emulated over 13.0) with the image primed:
contexts created and destroyed in turn (the driver recycles their handles),
100 alive at once, and the primary context reset and released: every
capture's load is served a live module of its own context, none breaks."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "routes"))
from routes_common import FAKE_DIR, SHIM  # noqa: E402

PROBE = os.environ["CG_CTX_PROBE"]
PTX = os.path.join(os.environ["CG_FAKE_DATA"], "kernels.ptx")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(args, prime, driver, emulate=None, preload=True):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.jsonl")
        env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION=driver, CAPGUARD_MODE="guard",
                   CAPGUARD_PRIME=prime, CAPGUARD_LOG=log)
        env.pop("LD_PRELOAD", None)
        if preload:
            env["LD_PRELOAD"] = SHIM
        if emulate:
            env["CAPGUARD_EMULATE_DRIVER"] = emulate
        p = subprocess.run([PROBE, PTX] + args, env=env, capture_output=True, text=True, timeout=100)
        vals = {k: int(v) for k, v in (l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)}
        recs = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
        return p, vals, recs


for driver, emulate in (("12020", None), ("13000", "12020")):
    where = f"driver {driver}" + (f" emulating {emulate}" if emulate else "")
    with tempfile.TemporaryDirectory() as tmp:
        prime = os.path.join(tmp, "prime.cgp")
        p, v, recs = run(["learn"], prime, driver, emulate)
        check(v.get("broken") == 1 and os.path.getsize(prime) > 0, f"{where}: learnt ({v})")
        if driver == "12020":
            p, v, _ = run(["turn", "20"], prime, driver, preload=False)
            check(v.get("broken") == 20 and v.get("handles", 99) < 20,
                  f"{where}: without capguard 20 of 20 break, handles recycled ({v})")
        for args in (["turn", "20"], ["turn", "100"], ["alive", "100"], ["reset"]):
            p, v, recs = run(args, prime, driver, emulate)
            served = sum(1 for r in recs if r["type"] == "event" and r.get("verdict") == "served")
            check(p.returncode == 0 and v.get("broken") == 0 and v.get("dead_modules") == 0 and served == v.get("contexts"),
                  f"{where}: {' '.join(args)}: 0 broken, 0 dead modules, every load served "
                  f"({v}, served {served}, rc {p.returncode} {p.stderr[-200:]!r})")
            if args[0] == "turn":
                check(v.get("handles", 0) < v.get("contexts", 0), f"{where}: handles were recycled ({v.get('handles')})")
            if args == ["alive", "100"]:
                summ = next((r for r in recs if r["type"] == "summary"), {})
                check(summ.get("primed_loaded") == 100 and summ.get("primed_unused") == 0,
                      f"{where}: one copy preloaded per context, none unused ({summ.get('primed_loaded')}, "
                      f"{summ.get('primed_unused')})")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
