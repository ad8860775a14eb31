#!/usr/bin/env python3
"""The system calls a capture's log line costs, counted with strace: a
capture over the fake driver (bench_instr capture N), with and without a
log, at N and 2N captures; each capture costs (calls(2N) - calls(N)) / N,
and the log what the run with one adds to that. Held to LIMIT: the write,
the descriptor's proof (fstat: still capguard's file), and the report's
signals held and released (signals_held.h), which also keep SIGXFSZ and
SIGPIPE from the host during the write (write_whole.h).

Usage: log_syscalls.py BUILDDIR   (exit 77 without strace)"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

LIMIT = 4
N = 20


def count(cmd, env, tmp):
    """System calls of every thread of cmd, by name."""
    out = os.path.join(tmp, "strace.txt")
    p = subprocess.run(["strace", "-f", "-qq", "-o", out] + cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("log_syscalls: %s failed (exit %d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-300:]))
    calls = collections.Counter()
    with open(out) as f:
        for line in f:
            m = re.match(r"\d+\s+(?:<\.\.\. )?(\w+)", line)
            if m and "resumed>" not in line:
                calls[m.group(1)] += 1
    return calls


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: log_syscalls.py BUILDDIR")
    if not shutil.which("strace"):
        print("strace is not installed (tools/install-deps.sh installs it): nothing counted")
        return 77
    build = os.path.abspath(sys.argv[1])
    bench = os.path.join(build, "bench", "bench_instr")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "LD_PRELOAD", "LD_LIBRARY_PATH"))}
    env.update(LD_LIBRARY_PATH=os.path.join(build, "tests", "fakecuda") + ":" + os.path.join(build, "bench", "capture"),
               LD_PRELOAD=os.path.join(build, "shim", "libcapguard.so"), CAPGUARD_MODE="guard", CAPGUARD_QUIET="1")
    with tempfile.TemporaryDirectory(prefix="capguard-syscalls-") as tmp:
        env["CAPGUARD_PRIME"] = os.path.join(tmp, "prime.cgp")
        per = {}
        for name, extra in (("no log", {}), ("log", {"CAPGUARD_LOG": os.path.join(tmp, "log.jsonl")})):
            e = dict(env, **extra)
            if "CAPGUARD_LOG" in extra and os.path.exists(extra["CAPGUARD_LOG"]):
                os.unlink(extra["CAPGUARD_LOG"])
            one, two = (count([bench, "capture", str(k)], e, tmp) for k in (N, 2 * N))
            per[name] = {c: (two[c] - one[c]) / N for c in set(one) | set(two) if two[c] != one[c]}
        log = per["log"]
        if log.get("write", 0) < 1:
            print("log_syscalls: a capture wrote no log line (%s): nothing measured" % log)
            return 1
        added = {c: log.get(c, 0) - per["no log"].get(c, 0) for c in set(log) | set(per["no log"])}
        added = {c: v for c, v in added.items() if v}
        total = sum(added.values())
        print("a capture's log line: %.1f system calls (%s); at most %d" %
              (total, ", ".join("%s %.1f" % kv for kv in sorted(added.items())), LIMIT))
        if total > LIMIT:
            print("log_syscalls: over")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
