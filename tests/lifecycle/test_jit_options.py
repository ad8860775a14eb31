"""Loads made with options are primed as their own calls would have made
them. A load with JIT or library options is recorded with them (the
priming file's version-2 image record); the next run preloads it with the
same options and serves it only to a load asking exactly those: the module
has the caller's register cap, and the output options (wall time, both logs
cut to the caller's size, the size slots replaced by the bytes written) are
what the driver wrote for the preload, which equal what it writes for the
caller's own call. Other options for the same bytes are not served, and the
event says what differs; an option capguard cannot reproduce (a symbol
table in the program's memory) is never served nor recorded, and named. The
fake driver shows what each load was made with (FAKECUDA_LOADS)."""
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


def run(how, prime, emulate=None, shim=True, image=PTX):
    with tempfile.TemporaryDirectory() as tmp:
        log, loads = os.path.join(tmp, "log.jsonl"), os.path.join(tmp, "loads")
        env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000", FAKECUDA_LOADS=loads)
        if shim:
            env.update(LD_PRELOAD=SHIM, CAPGUARD_MODE="guard", CAPGUARD_PRIME=prime, CAPGUARD_LOG=log)
        if emulate:
            env["CAPGUARD_EMULATE_DRIVER"] = emulate
        p = subprocess.run([PROBE, image, how], env=env, capture_output=True, text=True, timeout=60)
        vals = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
        recs = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
        made = open(loads).read() if os.path.exists(loads) else ""
        return p, vals, recs, made


def loads_of(recs):
    return [r for r in recs if r["type"] == "event" and r["event"] == "module-load"]


def verdicts(recs):
    return [r["verdict"] for r in loads_of(recs)]


def summary(recs):
    return next((r for r in recs if r["type"] == "summary"), {})


def version(prime):
    with open(prime, "rb") as f:
        return int.from_bytes(f.read(10)[8:10], "little")


OUTPUTS = ("regs", "info", "info_len", "error", "error_len")

with tempfile.TemporaryDirectory() as tmp:
    prime = os.path.join(tmp, "prime.cgp")
    # A version-1 file: a plain load refused on emulated 12.2 records the image without options.
    p, v, recs, _ = run("plain", prime, emulate="12020")
    check(v.get("load_result") == "900" and summary(recs).get("recorded") == 1, f"plain image recorded ({v})")
    check(version(prime) == 1, f"a file without options is written as version 1 (got {version(prime)})")

    # 1. Record the options with the image: learned on 13.0 (allowed), the file says version 2.
    p, v, recs, _ = run("opts", prime)
    check(v.get("load_result") == "0" and summary(recs).get("recorded") == 1, f"13.0: the load with options is recorded ({v})")
    ev = loads_of(recs)[0] if loads_of(recs) else {}
    check(ev.get("load_options") == "CU_JIT_MAX_REGISTERS=32,CU_JIT_WALL_TIME,CU_JIT_INFO_LOG_BUFFER,"
          "CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES=256,CU_JIT_ERROR_LOG_BUFFER,CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES=256",
          f"the event says the options: {ev.get('load_options')}")
    check(version(prime) == 2, f"the version-1 file holding a record with options is now version 2 (got {version(prime)})")

    # 2 and 3. Served on 12.2 only to the same options, outputs as the driver writes them for the call itself.
    _, direct, _, _ = run("opts", prime, shim=False)
    p, v, recs, made = run("opts", prime, emulate="12020")
    check(v.get("load_result") == "0" and v.get("end_result") == "0" and verdicts(recs) == ["served"],
          f"12.2: the same options are served and the capture holds: {v} {verdicts(recs)}")
    check("cuModuleLoadDataEx handle=" in made and "options=jit:0=32,2,3,4=256,5,6=256" in made,
          f"the preload was made with the recorded options: {made.strip()}")
    check(all(v.get(k) == direct.get(k) for k in OUTPUTS),
          f"served outputs equal the driver's for the call itself: {[(k, v.get(k), direct.get(k)) for k in OUTPUTS]}")
    check(v.get("regs") == "32", f"the module has the caller's register cap: regs={v.get('regs')}")
    check(v.get("wall") not in (None, "-1") and float(v["wall"]) >= 0, f"CU_JIT_WALL_TIME written: {v.get('wall')}")
    check(v.get("info", "").startswith("fakecuda: module loaded with a register cap")
          and v.get("info_len") == str(len(v.get("info", ""))), f"info log and its size: {v.get('info')!r} {v.get('info_len')}")
    check(v.get("error") == "" and v.get("error_len") == "0", f"error log empty, size 0: {v.get('error')!r} {v.get('error_len')}")

    # No options: served the plain record (cuModuleLoadDataEx with none is cuModuleLoadData).
    p, v, recs, _ = run("none", prime, emulate="12020")
    check(v.get("load_result") == "0" and verdicts(recs) == ["served"], f"no options: served the plain copy {verdicts(recs)}")

    # 5. Another register cap, another log size: not served, the event says what differs.
    p, v, recs, _ = run("opts64", prime, emulate="12020")
    ev = loads_of(recs)[0] if loads_of(recs) else {}
    check(v.get("load_result") == "900" and "served" not in verdicts(recs), f"other options not served: {v}")
    check(ev.get("options_differ") == "CU_JIT_MAX_REGISTERS recorded 32, asked 64", f"what differs: {ev.get('options_differ')}")
    check(v.get("wall") == "-1", "nothing written into the caller's options when not served")
    p, v, recs, _ = run("smalllog", prime, emulate="12020")
    ev = loads_of(recs)[0] if loads_of(recs) else {}
    check(ev.get("options_differ") == "CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES recorded 256, asked 12",
          f"another log size differs: {ev.get('options_differ')}")
    # ... and was recorded with its own: the next run serves it, its log cut to 12 bytes as the driver cuts it.
    _, direct, _, _ = run("smalllog", prime, shim=False)
    p, v, recs, _ = run("smalllog", prime, emulate="12020")
    check(verdicts(recs) == ["served"] and all(v.get(k) == direct.get(k) for k in OUTPUTS),
          f"the small log served as the driver cuts it: {[(k, v.get(k), direct.get(k)) for k in OUTPUTS]}")

    # 4. A symbol table in the program's memory: never served nor recorded, and named.
    p, v, recs, _ = run("foreign", prime)
    ev = loads_of(recs)[0] if loads_of(recs) else {}
    check(v.get("load_result") == "0" and summary(recs).get("recorded", 0) == 0,
          f"13.0: a load with a symbol table is not recorded ({summary(recs).get('recorded')})")
    check(ev.get("options_not_reproducible") == "CU_JIT_GLOBAL_SYMBOL_NAMES", f"the option named: {ev}")
    check("not served: option CU_JIT_GLOBAL_SYMBOL_NAMES is not one capguard can reproduce" in p.stderr,
          "stderr names it")
    p, v, recs, _ = run("foreign", prime, emulate="12020")
    check(v.get("load_result") == "900" and "served" not in verdicts(recs), f"12.2: refused, never served: {v}")

    # Library loads: binary-is-preserved (the runtime's lazy loads) and a JIT option.
    lprime = os.path.join(tmp, "lib.cgp")
    p, v, recs, _ = run("lib", lprime, emulate="12020")
    check(v.get("load_result") == "900" and summary(recs).get("recorded") == 1, f"12.2: the library load recorded {v}")
    p, v, recs, made = run("lib", lprime, emulate="12020")
    check(v.get("load_result") == "0" and v.get("kernel") == "0" and verdicts(recs) == ["served"],
          f"12.2: served, and its kernel found in the bytes the driver keeps: {v} {verdicts(recs)}")
    check("cuLibraryLoadData handle=" in made and "options=lib:1=1" in made, f"preloaded with the option: {made.strip()}")
    p, v, recs, _ = run("libjit", lprime)
    _, direct, _, _ = run("libjit", lprime, shim=False)
    p, v, recs, _ = run("libjit", lprime, emulate="12020")
    check(verdicts(recs) == ["served"] and v.get("regs") == direct.get("regs") == "32" and float(v.get("wall", -1)) >= 0,
          f"a library with a JIT option: served with the cap and the wall time {v}")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
