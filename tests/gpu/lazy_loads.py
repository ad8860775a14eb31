"""What the GPU scripts about the CUDA runtime's lazy loads share
(lazy_runtime_capture.py, torch_fatbin_names.py): the frames that mark such a
load, one capture whose body runs a kernel for the first time, the checks'
tally, a run under capguard in report mode on an emulated 12.2 driver, and
the events of a log."""
import json
import os
import subprocess

# The runtime's lazy loading: cuLibraryLoadData from these, at a kernel's first launch.
LAZY_FRAMES = ("__cudaGetKernel", "cudaGetFuncBySymbol")


def is_lazy(event):
    """Whether a logged call was made by the runtime's lazy loading."""
    return any(any(k in fr for k in LAZY_FRAMES) for fr in event.get("native_stack", []))


def capture_once(kind, body):
    """One torch.cuda.graph capture of body(torch, x, y) on two 4096-float
    tensors, replayed; prints 'RESULT kind: captured' (returns 0) or what
    failed (returns 1)."""
    import torch

    x = torch.arange(4096, device="cuda", dtype=torch.float32)
    y = torch.ones(4096, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            body(torch, x, y)
        g.replay()
        torch.cuda.synchronize()
        print(f"RESULT {kind}: captured", flush=True)
        return 0
    except Exception as e:  # noqa: BLE001 - what broke is the point
        print(f"RESULT {kind}: capture failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}",
              flush=True)
        return 1


class Checks:
    """PASS/FAIL lines, counted; finish() prints 'NAME: N passed, M failed'
    and gives the script's exit status."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def __call__(self, cond, what):
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        self.passed += bool(cond)
        self.failed += not cond

    def finish(self, out):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed (output in {out})")
        return 0 if self.failed == 0 else 1


def lazy_env(**more):
    """This environment without capguard's own variables, the runtime's
    loading lazy (unless more says otherwise)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env.update(PYTHONUNBUFFERED="1", CUDA_MODULE_LOADING="LAZY")
    env.update(more)
    return env


def run_under(cli, options, argv, env, save_as, timeout):
    """capguard run OPTIONS -- ARGV; its output also saved to save_as."""
    run = subprocess.run([cli, "run", *options, "--", *argv], env=env, capture_output=True, text=True,
                         timeout=timeout)
    with open(save_as, "w") as f:
        f.write(run.stdout + run.stderr)
    return run


def report_mode_12020(log):
    """The options of a run in report mode on an emulated 12.2 driver."""
    return ["--mode", "report", "--emulate-driver", "12020", "--log", log]


def read_events(path):
    """The event lines of a log ([] when there is none)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [e for e in (json.loads(l) for l in f if l.strip()) if e.get("type") == "event"]
