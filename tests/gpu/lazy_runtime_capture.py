#!/usr/bin/env python3
"""The CUDA runtime's own lazy loads meet a capture, next to a Triton kernel
(the blind spot of the operator's round 4): under capguard run in report mode
on an emulated 12.2 driver, two workers each capture a graph:
  cat     torch.cat, its kernel never launched before: the runtime loads the
          fatbin holding it at its first launch (cuLibraryLoadData from
          __cudaGetKernel, CUDA_MODULE_LOADING=LAZY), inside the capture;
  triton  a Triton kernel launched for the first time inside the capture.
It checks what capguard says: the runtime's load is an event whose image is
labelled with the arch this GPU runs (sm_90 on an H100, not the fatbin's
highest entry), its option (CU_LIBRARY_BINARY_IS_PRESERVED=1) is on the
event, the report gives no CUDA_MODULE_LOADING=EAGER (capguard serves such a
load: priming is offered), and the warm-up advice covers the runtime's image
(its kernels named, or said to be unnamed) as well as the Triton kernel. Then the cat worker alone with CUDA_MODULE_LOADING=EAGER: no
lazy load during capture. Prints PASS/FAIL lines and 'lazy_runtime: N passed,
M failed'; exit 0 when all passed, 77 when there is no GPU, torch or Triton.

  python3 tests/gpu/lazy_runtime_capture.py [--build build] [--out DIR]
(from the repository root; under 90 s on an H100)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from lazy_loads import Checks, capture_once, is_lazy, lazy_env, read_events, report_mode_12020, run_under

try:  # at module level: Triton reads the kernel's source through its module
    import triton
    import triton.language as tl

    @triton.jit
    def _capguard_lazy_demo_kernel(p, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(p + offs, tl.load(p + offs, mask=m) * 3.0, mask=m)
except Exception:  # noqa: BLE001 - skip_reason() says why
    triton = None


def worker(kind):
    """One capture of one kind; prints RESULT and exits 0 (captured) or 1."""
    if kind == "cat":  # first launch of cat's kernel: the runtime loads it now
        return capture_once(kind, lambda torch, x, y: torch.cat([x, y]))
    return capture_once(kind, lambda torch, x, y: _capguard_lazy_demo_kernel[(16,)](x, 4096, BLOCK=256))


def skip_reason():
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return f"torch missing: {e}"
    if triton is None:
        return "triton missing"
    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", choices=["cat", "triton"])
    ap.add_argument("--engine", action="store_true", help="start both workers (under capguard run)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)
    if args.engine:  # the engine: no CUDA of its own, two workers that each capture
        rcs = [subprocess.run([sys.executable, __file__, "--worker", k]).returncode for k in ("cat", "triton")]
        return 1 if any(rcs) else 0

    why = skip_reason()
    if why:
        print(f"SKIP lazy_runtime: {why}")
        return 77
    import torch

    major, minor = torch.cuda.get_device_capability()
    sm = major * 10 + minor
    cli = os.path.abspath(os.path.join(args.build, "tools", "capguard"))
    out = args.out or tempfile.mkdtemp(prefix="capguard-lazy-")
    os.makedirs(out, exist_ok=True)
    check = Checks("lazy_runtime")
    env = lazy_env()
    log = os.path.join(out, "lazy.jsonl")
    run = run_under(cli, report_mode_12020(log), [sys.executable, __file__, "--engine"], env,
                    os.path.join(out, "lazy-run.txt"), 300)
    print(run.stdout + run.stderr)
    loads = [e for e in read_events(log) if e.get("event") == "module-load"]
    lazy = [e for e in loads if is_lazy(e)]
    triton_loads = [e for e in loads if "_capguard_lazy_demo_kernel" in e.get("image", {}).get("kernels", [])]
    print(f"--- {len(loads)} loads during capture, {len(lazy)} from the runtime's lazy loading, "
          f"{len(triton_loads)} of the Triton kernel; this GPU: sm_{sm}")
    for e in lazy:
        im = e.get("image", {})
        print(f"    runtime load: {e.get('call')} {im.get('kind')} {im.get('size')} bytes sm {im.get('sm')} "
              f"archs {im.get('archs')} kernels {im.get('kernels')[:4] if im.get('kernels') else '(none named)'}")
    check(lazy, "a load during capture from the CUDA runtime's lazy loading (__cudaGetKernel in its stack)")
    check(triton_loads, "the Triton kernel's load during capture")
    fat = [e for e in lazy if e.get("image", {}).get("kind") == "fatbin"]
    check(fat and all(e["image"].get("sm") == sm for e in fat),
          f"the runtime's fatbin labelled sm_{sm}, the arch this GPU runs (not its highest entry)")
    check(f"(sm_{sm} on this device)" in run.stderr or not fat, "the event line says which entry this GPU runs")

    rep = subprocess.run([cli, "report", log], env=env, capture_output=True, text=True, timeout=120)
    repj = subprocess.run([cli, "report", "--json", log], env=env, capture_output=True, text=True, timeout=120)
    with open(os.path.join(out, "lazy-report.txt"), "w") as f:
        f.write(rep.stdout + rep.stderr)
    print(rep.stdout[rep.stdout.find("What to do"):])
    findings = {}
    try:
        findings = {x["finding"]: x for x in json.loads(repj.stdout)["findings"]}
    except Exception as e:  # noqa: BLE001
        print(f"    report --json unreadable: {e}")
    check(all(e.get("load_options") == "CU_LIBRARY_BINARY_IS_PRESERVED=1" for e in lazy),
          "the runtime's lazy load carries its option, CU_LIBRARY_BINARY_IS_PRESERVED=1")
    check("runtime-lazy-load" not in findings and "CUDA_MODULE_LOADING=EAGER" not in rep.stdout
          and "let capguard prime" in rep.stdout,
          "the report offers priming for the runtime's load, not CUDA_MODULE_LOADING=EAGER")
    warm = findings.get("warm-up", {}).get("sentence", "")
    named = [k for e in lazy for k in e.get("image", {}).get("kernels", [])]
    check("_capguard_lazy_demo_kernel" in warm, "the warm-up advice names the Triton kernel")
    # the advice names kernels as a person reads them (demangled, a template's instances once)
    check((named and (any(k in warm for k in named) or "at::native::" in warm)) or "cannot name" in warm,
          "the warm-up advice covers the runtime's image (its kernels, or said to be unnamed)")

    # CUDA_MODULE_LOADING=EAGER: the runtime loads its modules at start-up, none during capture
    elog = os.path.join(out, "eager.jsonl")
    eager = run_under(cli, report_mode_12020(elog), [sys.executable, __file__, "--worker", "cat"],
                      lazy_env(CUDA_MODULE_LOADING="EAGER"), os.path.join(out, "eager-run.txt"), 300)
    eevents = read_events(elog)
    elazy = [e for e in eevents if is_lazy(e)]
    print(f"--- EAGER: {len(eevents)} calls during capture, {len(elazy)} lazy loads; "
          f"{[l for l in eager.stdout.splitlines() if l.startswith('RESULT')]}")
    check(not elazy, "with CUDA_MODULE_LOADING=EAGER no lazy load during capture")
    return check.finish(out)


if __name__ == "__main__":
    sys.exit(main())
