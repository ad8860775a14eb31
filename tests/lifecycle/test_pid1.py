"""capguard run as PID 1 (the Docker recipe ENTRYPOINT ["capguard", "run", "--"])
behaves like tini and dumb-init: it reaps every orphan (as PID 1 of a PID
namespace, and as the subreaper elsewhere), forwards the usual signals to the
command, and exits with the command's status (128+N for signal N)."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "routes"))
from routes_common import SHIM  # noqa: E402

CLI = os.environ["CG_CLI"]
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


if os.geteuid() != 0 or not shutil.which("unshare") or \
        subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True).returncode:
    print("SKIP: needs root and unshare --pid (CI runs as root)")
    sys.exit(77)

# A shell started with `&` from a non-interactive shell (a CI script, a test
# run in the background) inherits SIGINT and SIGQUIT ignored, and an ignored
# signal stays ignored across exec: the command's trap would then never run,
# however capguard forwards. Each command here starts with the dispositions a
# terminal would give it.
FORWARDED = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGWINCH]


def default_signals():
    for s in FORWARDED:
        signal.signal(s, signal.SIG_DFL)


tmp = tempfile.mkdtemp()
env = dict(os.environ, CAPGUARD_SHIM=SHIM, TMPDIR=tmp)
env.pop("LD_PRELOAD", None)
PID1 = ["unshare", "--pid", "--fork", "--mount-proc", CLI, "run", "-q", "--"]

# Zombies in the namespace, counted by the command itself after 200 orphaned
# helpers (each a subshell's background sleep, orphaned when the subshell
# exits) have ended.
ZOMBIES = ("for i in $(seq 200); do (sleep 0.01 &); done; sleep 1.5; "
           "n=0; for f in /proc/[0-9]*/stat; do s=$(cut -d' ' -f3 \"$f\" 2>/dev/null); "
           "[ \"$s\" = Z ] && n=$((n+1)); done; echo zombies=$n")
p = subprocess.run(PID1 + ["sh", "-c", ZOMBIES], env=env, capture_output=True, text=True, timeout=60,
                   preexec_fn=default_signals)
check(p.returncode == 0 and "zombies=0" in p.stdout,
      f"PID 1: 200 orphaned helpers leave 0 zombies ({p.stdout.strip()}, rc {p.returncode}, {p.stderr[-200:]!r})")

# Not PID 1: orphans are adopted (subreaper) and reaped.
ADOPTED = ("(sleep 1 & echo $! > \"$TMPDIR/orphan\"); sleep 0.2; "
           "echo ppid=$(awk '/^PPid/ {print $2}' /proc/$(cat \"$TMPDIR/orphan\")/status); echo capguard=$PPID; "
           "sleep 1.2; echo state=$(cut -d' ' -f3 /proc/$(cat \"$TMPDIR/orphan\")/stat 2>/dev/null || echo gone)")
p = subprocess.run([CLI, "run", "-q", "--", "sh", "-c", ADOPTED], env=env, capture_output=True, text=True, timeout=60,
                   preexec_fn=default_signals)
vals = dict(l.split("=", 1) for l in p.stdout.split() if "=" in l)
check(vals.get("ppid") and vals.get("ppid") == vals.get("capguard"),
      f"not PID 1: an orphan of the command is adopted by capguard run ({vals})")
check(vals.get("state") == "gone", f"and reaped when it ends ({vals.get('state')})")

# Exit status: the command's, 128+N for a signal.
for cmd, rc in ((["sh", "-c", "exit 42"], 42), (["sh", "-c", "kill -TERM $$"], 143), (["sh", "-c", "kill -KILL $$"], 137)):
    p = subprocess.run(PID1 + cmd, env=env, capture_output=True, text=True, timeout=60,
                   preexec_fn=default_signals)
    check(p.returncode == rc, f"PID 1: {cmd[-1]!r} exits {p.returncode} (want {rc})")


def capguard_of(unshare_pid):
    """The host pid of capguard run, unshare's child."""
    for _ in range(200):
        try:
            kids = open(f"/proc/{unshare_pid}/task/{unshare_pid}/children").read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.02)
    return None


# Forwarding: each signal sent to capguard (PID 1) reaches the command, which
# traps it and exits with its own code.
for sig, code in (("TERM", 7), ("INT", 8), ("HUP", 9), ("QUIT", 10), ("USR1", 11), ("USR2", 12), ("WINCH", 13)):
    ready = os.path.join(tmp, "ready." + sig)
    cmd = f"trap 'echo got {sig}; exit {code}' {sig}; touch '{ready}'; while :; do sleep 0.05; done"
    proc = subprocess.Popen(PID1 + ["sh", "-c", cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_signals)
    for _ in range(400):
        if os.path.exists(ready):
            break
        time.sleep(0.02)
    cg = capguard_of(proc.pid)
    out, sends = "", 0
    for sends in range(1, 4):  # a signal lost would show as more than one send
        if cg:
            os.kill(cg, getattr(signal, "SIG" + sig))
        try:
            out, err = proc.communicate(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    else:  # never a hang: capguard (the namespace's init) taken down with the namespace
        if cg:
            os.kill(cg, signal.SIGKILL)
        proc.kill()
        out, err = proc.communicate(timeout=20)
    check(proc.returncode == code and f"got {sig}" in out and sends == 1,
          f"PID 1: SIG{sig} forwarded to the command, its exit {code} kept (rc {proc.returncode}, "
          f"{out.strip()!r}, {sends} send{'s' if sends > 1 else ''})")

# A command that does not catch the forwarded SIGTERM dies of it: 143.
ready = os.path.join(tmp, "ready.plain")
proc = subprocess.Popen(PID1 + ["sh", "-c", f"touch '{ready}'; exec sleep 30"], env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
for _ in range(400):
    if os.path.exists(ready):
        break
    time.sleep(0.02)
time.sleep(0.2)
cg = capguard_of(proc.pid)
if cg:
    os.kill(cg, signal.SIGTERM)
proc.communicate(timeout=20)
check(proc.returncode == 143, f"PID 1: an uncaught forwarded SIGTERM gives 143 ({proc.returncode})")

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
print("all passed")
