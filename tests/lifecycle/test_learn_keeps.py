"""What a learn saw is kept, and said, even when its program never exits,
and check's words send no one back to the learn that just made the file.

- Copies counted as they grow: a program that loads the same bytes in two
  captures (both copies kept alive) and is then killed (SIGKILL, SIGTERM)
  leaves a file that states 2 copies: the count is written at the capture's
  end once it grows, not only at exit.
- prime learn says how many loads it recorded and how many it could not,
  with the reason (an option capguard cannot reproduce).
- prime check: a load whose option capguard cannot reproduce, or whose
  options differ from those recorded, is said as that, with no learn command
  (learning again would not change it).
- capguard run: images preloaded and never used because the run broke at its
  first capture are said to be that, not another program's."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "routes"))
from routes_common import FAKE_DIR, SHIM  # noqa: E402

PROBE = os.environ["CG_JIT_PROBE"]
CLI = os.environ["CG_CLI"]
DATA = os.environ["CG_FAKE_DATA"]
PTX = os.path.join(DATA, "kernels.ptx")
CUBIN = os.path.join(DATA, "kernels_sm90.cubin")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def env(**more):
    e = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    e.update(LD_LIBRARY_PATH=FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000")
    e.update(more)
    return e


def copies(prime):
    """The copies column of the file's one image (prime list), None when there is none."""
    out = subprocess.run([CLI, "prime", "list", prime], capture_output=True, text=True).stdout.splitlines()
    if len(out) < 2:
        return None
    return out[1].split()[out[0].split().index("copies")]


def killed_after_captures(cmd, e, sig):
    """Runs cmd, waits for the probe's 'captured pid=N', sends sig to N, returns (rc, output)."""
    p = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid, out = None, []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line)
        if line.startswith("captured pid="):
            pid = int(line.split("=")[1])
            break
    if pid:
        os.kill(pid, sig)
    rest, _ = p.communicate(timeout=60)
    return p.returncode, "".join(out) + rest, pid


with tempfile.TemporaryDirectory() as tmp:
    # Copies written as they grow: the shim alone, the program killed after its captures.
    for sig in (signal.SIGKILL, signal.SIGTERM):
        prime = os.path.join(tmp, f"kill-{sig}.cgp")
        e = env(LD_PRELOAD=SHIM, CAPGUARD_MODE="guard", CAPGUARD_PRIME=prime, CAPGUARD_QUIET="1")
        rc, out, pid = killed_after_captures([PROBE, PTX, "twice-hang"], e, sig)
        check(pid is not None, f"the probe loaded twice and waited ({out.strip()[-200:]})")
        check(copies(prime) == "2", f"killed by {signal.Signals(sig).name} after its captures: the file states "
                                    f"{copies(prime)} copies (want 2)")

    # prime learn of a program that never exits, killed: every copy kept, and the count said.
    prime = os.path.join(tmp, "learn.cgp")
    rc, out, pid = killed_after_captures([CLI, "prime", "learn", "--prime", prime, "--", PROBE, PTX, "twice-hang"],
                                         env(), signal.SIGKILL)
    check(copies(prime) == "2", f"prime learn, its program killed: {copies(prime)} copies (want 2)")
    check("capguard prime learn: 2 loads recorded, 0 could not be" in out, f"learn says what it recorded: {out[-600:]}")

    # A load capguard cannot reproduce: learn says it could not record it, and why.
    prime = os.path.join(tmp, "foreign.cgp")
    p = subprocess.run([CLI, "prime", "learn", "--prime", prime, "--", PROBE, PTX, "foreign"], env=env(),
                       capture_output=True, text=True, timeout=60)
    check("capguard prime learn: 0 loads recorded, 1 could not be: 1 passed CU_JIT_GLOBAL_SYMBOL_NAMES, which "
          "capguard cannot reproduce" in p.stderr, f"learn names the load it could not record: {p.stderr[-600:]}")
    # ... and check says so, without sending the user back to learn.
    subprocess.run([CLI, "prime", "learn", "--prime", prime, "--", PROBE, PTX, "plain"], env=env(),
                   capture_output=True, text=True, timeout=60)
    p = subprocess.run([CLI, "prime", "check", "--prime", prime, "--", PROBE, PTX, "foreign"], env=env(),
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "1 passed CU_JIT_GLOBAL_SYMBOL_NAMES, which capguard cannot reproduce and so never "
          "records (learning again would not help" in p.stderr, f"check gives the true cause: {p.stderr[-700:]}")
    check("prime learn" not in p.stderr.split("FAIL:", 1)[-1], "check does not send the user back to learn")

    # Options that differ from those learned: said, with no learn command.
    prime = os.path.join(tmp, "regs.cgp")
    subprocess.run([CLI, "prime", "learn", "--prime", prime, "--", PROBE, PTX, "opts"], env=env(),
                   capture_output=True, text=True, timeout=60)
    p = subprocess.run([CLI, "prime", "check", "--prime", prime, "--", PROBE, PTX, "opts"],
                       env=env(JIT_PROBE_REGS="64"), capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and "(CU_JIT_MAX_REGISTERS recorded 32, asked 64)" in p.stderr,
          f"check says what differs: {p.stderr[-700:]}")
    check("prime learn" not in p.stderr.split("FAIL:", 1)[-1], "and gives no learn command for it")
    p = subprocess.run([CLI, "prime", "check", "--prime", prime, "--", PROBE, PTX, "opts"], env=env(),
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"the same options check ok: {p.stderr[-300:]}")

    # Preloaded, never used, because the run broke at its first capture: said as that.
    p = subprocess.run([CLI, "run", "--emulate-driver", "12020", "--prime", prime, "--", PROBE, CUBIN, "plain"],
                       env=env(), capture_output=True, text=True, timeout=60)
    check("never used (the run broke at its first capture, before the loads they serve)" in p.stderr,
          f"the unused image's true cause: {p.stderr[-900:]}")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
