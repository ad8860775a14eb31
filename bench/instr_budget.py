#!/usr/bin/env python3
"""What capguard adds to a call, counted in instructions with callgrind, held
to its budget. Wall-clock figures on shared machines drown a few nanoseconds
in noise; instruction counts do not, so this is a test CI runs: it exits 1
when any budget is exceeded.

Each scenario runs bench_instr (bench/bench_instr.c) under
`valgrind --tool=callgrind --toggle-collect=instr_measured`, which counts
only the measured loop, at N and 2N iterations, without capguard and with it
preloaded: an iteration costs (Ir(2N) - Ir(N)) / N, and capguard adds the
difference. Hot calls run over the null driver (bench/nulldrv: the driver
does nothing), captures and loads over the fake one (tests/fakecuda). The
start-up scenario counts all of /bin/true, with and without the shim.

Usage: instr_budget.py BUILDDIR [SCENARIO...]   (needs valgrind)
Prints one line a scenario: driver, with capguard, added, budget, ok/OVER."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = os.path.join(ROOT, "tests", "data", "kernels_sm90.cubin")
PY_CAPTURE = os.path.join(ROOT, "bench", "instr_capture.py")

# name: (bench_instr scenario or None for start-up, driver, capguard's
# environment, budget in instructions added, N)
SCENARIOS = {
    "cuEventRecord": ("record", "null", {}, 8, 2000),
    "cuStreamQuery": ("squery", "null", {}, 8, 2000),
    "cuEventQuery": ("query", "null", {}, 12, 2000),
    "cuLaunchKernel": ("launch", "null", {}, 8, 2000),
    "cuLaunchKernelEx": ("launchex", "null", {}, 8, 2000),
    "cuMemcpyHtoDAsync_v2": ("copy", "null", {}, 8, 2000),
    "capture (guard)": ("capture", "fake", {"CAPGUARD_MODE": "guard"}, 5000, 40),
    # another thread alive that queried events before: its slot parked, a
    # begin makes no membarrier (shim/model/query_fence.c)
    "capture (guard, a thread that queried)": ("capture_queried", "fake", {"CAPGUARD_MODE": "guard"}, 5000, 40),
    "capture (guard + log)": ("capture", "fake", {"CAPGUARD_MODE": "guard", "CAPGUARD_LOG": "@log"}, 10000, 40),
    "capture (guard, Python)": ("py:0", "fake", {"CAPGUARD_MODE": "guard"}, 6000, 20),
    "capture (guard, Python, 60 frames deeper)": ("py:60", "fake", {"CAPGUARD_MODE": "guard"}, 6000, 20),
    "load served": ("load", "fake", {"CAPGUARD_MODE": "guard", "CAPGUARD_PRIME": "@prime"}, 60000, 10),
    "load served, wide caller": ("load_wide", "fake", {"CAPGUARD_MODE": "guard", "CAPGUARD_PRIME": "@prime"},
                                 60000, 10),
    "start-up (/bin/true)": (None, "none", {"CAPGUARD_MODE": "guard"}, 100000, 0),
    # The hang watch (CAPGUARD_HANG_S), read beside the rows without it: a
    # synchronize in its thread's slot adds at most 20 to the plain one's 40;
    # a capture adds about 270 to guard's (its begin and end marked in the
    # slot, the graph's begin site copied for its execs, and glibc's locked
    # malloc and mutex paths once the watcher is a second thread).
    "cuStreamSynchronize": ("sync", "null", {}, 40, 2000),
    "cuStreamSynchronize (hang watch)": ("sync", "null", {"CAPGUARD_HANG_S": "600"}, 60, 2000),
    "capture (guard + hang watch)": ("capture", "fake", {"CAPGUARD_MODE": "guard", "CAPGUARD_HANG_S": "600"},
                                     5100, 40),
}


def callgrind_ir(cmd, env, tmp, measured):
    """Instructions callgrind counts running cmd: inside the functions named
    by measured (a list), or all of it when measured is empty."""
    out = os.path.join(tmp, "cg.out")
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, "--dump-line=no",
          "--compress-strings=no", "--compress-pos=no"]
    vg += ["--toggle-collect=" + f for f in measured]
    p = subprocess.run(vg + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("instr_budget: %s failed (exit %d): %s" % (" ".join(cmd), p.returncode,
                                                            p.stderr.strip().splitlines()[-1:] or ""))
    ir = None
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals): (\d+)", line)
            if m:
                ir = int(m.group(1))
    os.unlink(out)
    if ir is None:
        sys.exit("instr_budget: no totals in callgrind's output for %s" % " ".join(cmd))
    return ir


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: instr_budget.py BUILDDIR [SCENARIO...]")
    if not shutil.which("valgrind"):
        print("valgrind is not installed (tools/install-deps.sh installs it): nothing counted")
        return 77
    build = os.path.abspath(sys.argv[1])
    wanted = sys.argv[2:] or list(SCENARIOS)
    for w in wanted:
        if w not in SCENARIOS:
            sys.exit("instr_budget: unknown scenario '%s' (one of: %s)" % (w, ", ".join(SCENARIOS)))
    bench = os.path.join(build, "bench", "bench_instr")
    shim = os.path.join(build, "shim", "libcapguard.so")
    libdirs = {"null": os.path.join(build, "bench", "nulldrv"), "fake": os.path.join(build, "tests", "fakecuda")}
    wide = os.path.join(build, "bench", "capture")
    for f in (bench, shim):
        if not os.path.exists(f):
            sys.exit("instr_budget: %s not built" % f)

    # Nothing of the caller's environment that changes what is counted: meson
    # test's MALLOC_PERTURB_ makes every malloc and free write the block.
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("CAPGUARD_", "LD_PRELOAD", "LD_LIBRARY_PATH", "FAKECUDA_", "MALLOC_"))}
    base["CAPGUARD_QUIET"] = "1"
    over = []
    with tempfile.TemporaryDirectory(prefix="capguard-instr-") as tmp:
        prime = os.path.join(tmp, "prime.cgp")
        # The priming file the served loads come from: one run records the image.
        env = dict(base, LD_LIBRARY_PATH=libdirs["fake"] + ":" + wide, LD_PRELOAD=shim, CAPGUARD_MODE="guard",
                   CAPGUARD_PRIME=prime)
        subprocess.run([bench, "load", "1", IMAGE], env=env, check=True, stderr=subprocess.DEVNULL)
        print("%-42s %10s %10s %9s %8s" % ("per call", "driver", "capguard", "added", "budget"))
        for name in wanted:
            scen, drv, extra, budget, n = SCENARIOS[name]
            env = dict(base)
            if drv != "none":
                env["LD_LIBRARY_PATH"] = libdirs[drv] + ":" + wide
            # A priming file of its own (an empty one unless the scenario's):
            # never the user's default, whose records would change what runs.
            with_cg = dict(env, LD_PRELOAD=shim, CAPGUARD_PRIME=os.path.join(tmp, "none.cgp"))
            for k, v in extra.items():
                with_cg[k] = {"@log": os.path.join(tmp, "log.jsonl"), "@prime": prime}.get(v, v)
            if scen is None:
                cost = [callgrind_ir(["/bin/true"], e, tmp, []) for e in (env, with_cg)]
            else:
                if scen.startswith("py:"):  # Python: only the libcudart stand-in's begin and end are counted
                    cmd = lambda k: [os.path.realpath(sys.executable), PY_CAPTURE, os.path.join(wide, "libbench_wide_caller.so"),
                                     str(k), scen[3:]]
                    measured = ["cg_bench_cudart_begin", "cg_bench_cudart_end"]
                else:
                    img = [IMAGE] if scen.startswith("load") else []
                    cmd = lambda k: [bench, scen, str(k)] + img
                    measured = ["instr_measured"]
                cost = []
                for e in (env, with_cg):
                    e = dict(e, PYTHONHASHSEED="0")
                    one = callgrind_ir(cmd(n), e, tmp, measured)
                    two = callgrind_ir(cmd(2 * n), e, tmp, measured)
                    cost.append((two - one) / n)
            added = cost[1] - cost[0]
            ok = added <= budget
            if not ok:
                over.append(name)
            print("%-42s %10.0f %10.0f %+9.0f %8d %s" % (name, cost[0], cost[1], added, budget, "ok" if ok else "OVER"),
                  flush=True)
    if over:
        print("instr_budget: over budget: %s" % ", ".join(over))
        return 1
    print("instr_budget: every budget held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
