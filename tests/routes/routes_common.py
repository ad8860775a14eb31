"""Shared helpers for the route tests: run a probe under capguard over the
fake driver and read back what it printed, what capguard said on stderr, and
the JSON Lines log."""
import json
import os
import re
import subprocess
import tempfile

SHIM = os.environ["CG_SHIM"]
FAKE_DIR = os.environ["CG_FAKE_DIR"]
PROBE = os.environ["CG_PROBE"]
PROBE_DIRECT = os.environ["CG_PROBE_DIRECT"]
DATA = os.environ["CG_DATA"]
CUBIN = os.path.join(DATA, "kernels_sm90.cubin")
CUBIN_SIZE = os.path.getsize(CUBIN)

# The ground-truth columns: (who calls, capture mode, calling thread swaps to relaxed)
COLUMNS = [
    ("same", "global", False),
    ("same", "thread-local", False),
    ("same", "relaxed", False),
    ("same", "global", True),
    ("other", "global", False),
    ("other", "thread-local", False),
    ("other", "global", True),
]
# Columns in which a capture prohibits the calling thread (driver-semantics.md:
# exactly where cuModuleUnload answers 900+inv).
PROHIBITED = {("same", "global", False), ("same", "thread-local", False), ("other", "global", False)}

CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901


class Run:
    def __init__(self, proc, log_path):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.values = {}
        for line in proc.stdout.splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                self.values[k] = v
        self.records = []
        if log_path and os.path.exists(log_path):
            with open(log_path) as f:
                self.records = [json.loads(line) for line in f if line.strip()]

    def int(self, key):
        return int(self.values[key])

    def of_type(self, t):
        return [r for r in self.records if r.get("type") == t]

    @property
    def events(self):
        return self.of_type("event")

    def report_lines(self):
        # Event blocks begin "capguard: pid N, HH:MM:SS.mmm UTC: cu...": returned
        # without the stamp, which each test would otherwise have to skip.
        stamp = re.compile(r"^capguard: pid [0-9]+, [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} UTC: (cu.*)")
        return ["capguard: " + m.group(1) for m in map(stamp.match, self.stderr.splitlines()) if m]


def run_probe(args, route="dlsym", driver=13000, env_extra=None, preload=True, log=True, probe=None):
    exe = probe or (PROBE_DIRECT if route == "direct" else PROBE)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = FAKE_DIR
    env["FAKECUDA_DRIVER_VERSION"] = str(driver)
    env.setdefault("CAPGUARD_MODE", "report")
    env.pop("CAPGUARD_LOG", None)
    with tempfile.TemporaryDirectory() as tmp:
        log_path = os.path.join(tmp, "log.jsonl") if log else None
        if log_path:
            env["CAPGUARD_LOG"] = log_path
        env["CAPGUARD_PRIME"] = os.path.join(tmp, "prime.cgp")
        if preload:
            env["LD_PRELOAD"] = SHIM
        if env_extra:
            env.update(env_extra)
        proc = subprocess.run([exe, "--route", route] + args, env=env, capture_output=True, text=True,
                              timeout=60)
        return Run(proc, log_path)


def column_args(col):
    who, mode, swap = col
    args = ["--thread", who, "--mode", mode]
    if swap:
        args.append("--swap")
    return args
