"""capguard never ends the host when its own allocations fail.

The route and priming probes run under capguard with an allocator that fails
capguard's allocations (failalloc.c): every one after the first N, for each N
up to all the allocations a run makes, and at random with several seeds. The
host must finish as it does without failures (exit status, every line it
prints up to the capture's end), never killed by a signal; capguard says so
in at most one "out of memory" line, and with every allocation failing it is
pure pass-through: the host prints exactly what it prints without capguard.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ["CG_ROUTES_DIR"])
from routes_common import FAKE_DIR, PROBE, SHIM, DATA  # noqa: E402

FAILALLOC = os.environ["CG_FAILALLOC"]
STALE_PROBE = os.environ["CG_STALE_PROBE"]
CUBIN = os.path.join(DATA, "kernels_sm90.cubin")

# (name, probe arguments, environment, driver version)
SCENARIOS = [
    ("guard-load-13.0", ["--op", "load", "--image", CUBIN], {"CAPGUARD_MODE": "guard"}, 13000),
    ("guard-load-12.2", ["--op", "load", "--image", CUBIN], {"CAPGUARD_MODE": "guard"}, 12020),
    ("emulate-12.2", ["--op", "library", "--image", CUBIN],
     {"CAPGUARD_MODE": "guard", "CAPGUARD_EMULATE_DRIVER": "12020"}, 13000),
    ("rescue", ["--op", "loadex", "--image", CUBIN], {"CAPGUARD_MODE": "guard", "CAPGUARD_RESCUE": "1"}, 12020),
    ("deferred-unload", ["--op", "unload", "--image", CUBIN], {"CAPGUARD_MODE": "guard"}, 13000),
    ("report-file", ["--op", "file", "--image", CUBIN, "--thread", "other"], {"CAPGUARD_MODE": "report"}, 13000),
    ("second-thread", ["--op", "load", "--image", CUBIN, "--second", "global", "--repeat", "2"],
     {"CAPGUARD_MODE": "guard"}, 13000),
    # the stale-pointer check: a graph walked, a free and a launch named (tests/routes/stale_probe.c)
    ("stale", ["--op", "realloc-launch"], {"CAPGUARD_MODE": "guard", "CAPGUARD_STALE": "1", "CG_CUBIN": CUBIN},
     13000, None, STALE_PROBE),
    ("stale-12.2", ["--op", "realloc-launch"], {"CAPGUARD_MODE": "report", "CAPGUARD_STALE": "1", "CG_CUBIN": CUBIN},
     12020, None, STALE_PROBE),
]


def run(args, env_extra, driver, preload, prime_from=None, probe=None):
    env = dict(os.environ)
    env.update({"LD_LIBRARY_PATH": FAKE_DIR, "FAKECUDA_DRIVER_VERSION": str(driver)})
    for k in ("CAPGUARD_LOG", "CG_FAIL_AFTER", "CG_FAIL_SEED"):
        env.pop(k, None)
    with tempfile.TemporaryDirectory() as tmp:
        env["CAPGUARD_LOG"] = os.path.join(tmp, "log.jsonl")
        env["CAPGUARD_PRIME"] = os.path.join(tmp, "prime.cgp")
        if prime_from:  # a priming file with the image recorded: the next run preloads and serves
            with open(prime_from, "rb") as src, open(env["CAPGUARD_PRIME"], "wb") as dst:
                dst.write(src.read())
        if preload:
            env["LD_PRELOAD"] = preload
        env.update(env_extra)
        p = subprocess.run([probe or PROBE, "--route", "dlsym"] + args, env=env, capture_output=True, text=True,
                           timeout=60)
        return p


def host_lines(out):
    # wrapped_owner names the object a wrapped pointer lies in: capguard's
    # wrapper is still handed out (it passes straight through); the rest is
    # what the driver answered the host.
    return [l for l in out.splitlines() if not l.startswith("wrapped_owner=")]


def allocations(stderr):
    m = re.search(r"failalloc: (\d+) of capguard's (\d+) allocations failed", stderr)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def main():
    if os.environ.get("CG_SANITIZED") == "1":
        # ASan replaces malloc itself, and an instrumented replacement of it
        # runs before ASan's runtime is ready: the plain build runs this.
        print("skip: a failing allocator cannot be preloaded beside AddressSanitizer's own")
        return 77
    failures = []
    runs = 0
    both = FAILALLOC + ":" + SHIM
    with tempfile.TemporaryDirectory() as keep:
        # A priming file that holds the image, so the replay path (preload, serve) is exercised too.
        prime = os.path.join(keep, "prime.cgp")
        env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000",
                   LD_PRELOAD=SHIM, CAPGUARD_MODE="guard", CAPGUARD_PRIME=prime)
        env.pop("CAPGUARD_LOG", None)
        subprocess.run([PROBE, "--route", "dlsym", "--op", "load", "--image", CUBIN], env=env,
                       capture_output=True, timeout=60, check=True)
        scenarios = SCENARIOS + [("replay", ["--op", "load", "--image", CUBIN], {"CAPGUARD_MODE": "guard"},
                                  13000, prime)]
        for sc in scenarios:
            name, args, extra, driver = sc[:4]
            prime_from = sc[4] if len(sc) > 4 else None
            probe = sc[5] if len(sc) > 5 else None
            bare = run(args, extra, driver, None, prime_from, probe)
            normal = run(args, extra, driver, both, prime_from, probe)
            _, total = allocations(normal.stderr)
            if total == 0:
                failures.append(f"{name}: failalloc saw none of capguard's allocations:\n{normal.stderr}")
                continue
            # Every cut-off point up to the run's own count (all of them for
            # a small run, a spread for a large one), then random failures.
            step = max(1, total // 40)
            cases = [{"CG_FAIL_AFTER": str(n)} for n in range(0, total + 1, step)]
            cases += [{"CG_FAIL_SEED": str(s)} for s in range(1, 9)]
            for case in cases:
                p = run(args, dict(extra, **case), driver, both, prime_from, probe)
                runs += 1
                what = f"{name} {case}"
                if p.returncode != normal.returncode:
                    failures.append(f"{what}: exit {p.returncode}, without failures {normal.returncode}\n"
                                    f"{p.stderr[-2000:]}")
                    continue
                if "end_result=" not in p.stdout:
                    failures.append(f"{what}: the host did not reach its capture's end:\n{p.stdout}")
                oom = [l for l in p.stderr.splitlines() if l.startswith("capguard: out of memory")]
                if len(oom) > 1:
                    failures.append(f"{what}: more than one out-of-memory warning:\n" + "\n".join(oom))
                if case.get("CG_FAIL_AFTER") == "0":
                    if not oom:
                        failures.append(f"{what}: no warning with every allocation failing:\n{p.stderr}")
                    if host_lines(p.stdout) != host_lines(bare.stdout):
                        failures.append(f"{what}: not pass-through: the host printed\n{p.stdout}\n"
                                        f"and without capguard\n{bare.stdout}")
            print(f"{name}: {total} allocations by capguard in a run; {len(cases)} failing runs")
    for f in failures:
        print("FAIL: " + f)
    print(f"{runs} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
