#!/usr/bin/env python3
"""Torch's own kernels named: the fatbin the CUDA runtime loads lazily for
torch.cat (cuLibraryLoadData from __cudaGetKernel at the kernel's first
launch, inside a capture) is zstd-compressed, as every fatbin of torch 2.11
(CUDA 13) is; capguard decompresses its entries and names their kernels.

Under capguard run, report mode on an emulated 12.2 driver, a worker captures
torch.cat of two tensors, cat's kernel never launched before. Checks: the
runtime's lazy load is logged with its fatbin's kernels named (not 'kernels ?'
nor '(names unavailable)'), among them a cat kernel (CatArrayBatchedCopy...)
unless the names were cut at capguard's 4 KB; the event line on stderr names
them, demangled (at::native::..., no _ZN on capguard's lines; the log keeps
the symbols); the report's warm-up advice names kernels and calls no image one
capguard cannot name. Then in guard mode with a priming file: the runtime's
load passes CU_LIBRARY_BINARY_IS_PRESERVED=1, which capguard records with the
image: its event says so ("load_options"), prime list shows the fatbin with
its option, and run's next: says to run again (no CUDA_MODULE_LOADING=EAGER,
no "make it before capture"); the run after it is served the fatbin and
captures. Prints PASS/FAIL lines, the
names found, and 'torch_fatbin_names: N passed, M failed'; exit 0 when all
passed, 77 without a GPU or torch.

  python3 tests/gpu/torch_fatbin_names.py [--build build] [--out DIR]
(from the repository root; under 60 s on an H100)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from lazy_loads import Checks, capture_once, is_lazy, lazy_env, read_events, report_mode_12020, run_under


def worker():
    """Captures torch.cat, its kernel's first launch; prints RESULT."""
    # the runtime loads the fatbin holding cat's kernel now
    return capture_once("cat", lambda torch, x, y: torch.cat([x, y]))


def skip_reason():
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return f"torch missing: {e}"
    if not torch.cuda.is_available():
        return "no CUDA device"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.worker:
        return worker()
    why = skip_reason()
    if why:
        print(f"SKIP torch_fatbin_names: {why}")
        return 77
    import torch

    cli = os.path.abspath(os.path.join(args.build, "tools", "capguard"))
    out = args.out or tempfile.mkdtemp(prefix="capguard-torch-names-")
    os.makedirs(out, exist_ok=True)
    check = Checks("torch_fatbin_names")
    env = lazy_env()
    log = os.path.join(out, "names.jsonl")
    run = run_under(cli, report_mode_12020(log), [sys.executable, __file__, "--worker"], env,
                    os.path.join(out, "names-run.txt"), 120)
    loads = [e for e in read_events(log) if e.get("event") == "module-load"]
    lazy = [e for e in loads if is_lazy(e)]
    fat = [e for e in lazy if e.get("image", {}).get("kind") == "fatbin"]
    print(f"--- torch {torch.__version__}: {len(loads)} loads during capture, {len(lazy)} from the runtime's "
          f"lazy loading, {len(fat)} of them fatbins")
    names = []
    for e in fat:
        im = e["image"]
        names += im.get("kernels", [])
        print(f"    {e.get('call')}: fatbin {im.get('size')} bytes, sm {im.get('sm')}, archs {im.get('archs')}, "
              f"{len(im.get('kernels', []))} kernels named{' (cut at 4 KB)' if im.get('kernels_truncated') else ''}")
        for k in im.get("kernels", [])[:8]:
            print(f"      {k[:150]}")
    check(fat, "a fatbin loaded during capture by the CUDA runtime's lazy loading (__cudaGetKernel in its stack)")
    check(fat and all(e["image"].get("kernels") for e in fat), "its kernels are named (not 'kernels ?')")
    cut = any(e["image"].get("kernels_truncated") for e in fat)
    check(any("Cat" in k for k in names) or (names and cut),
          "cat's kernel (CatArrayBatchedCopy...) among them" + (" (or the names were cut at 4 KB)" if cut else ""))
    check(all(w not in run.stderr for w in ("(names unavailable)", "kernels ?", "kernels not named")),
          "the event and next: lines on stderr show no unnamed image")
    # torch's names are C++ ones: capguard's lines show them demangled and shortened
    # (at::native::(anonymous namespace)::CatArrayBatchedCopy<...>), the shim with torch's own
    # __cxa_demangle, the log keeps the symbols
    ours = [ln for ln in run.stderr.splitlines() if ln.startswith(("capguard:", "  kernels:"))]
    kern = [ln for ln in ours if ln.startswith("  kernels:")]
    for ln in kern[:2]:
        print(f"    {ln[:300]}")
    check(kern and any("at::native::" in ln for ln in kern) and not any("_ZN" in ln for ln in ours),
          "capguard's lines on stderr name torch's kernels demangled (at::native::...), no _ZN")
    check(any(k.startswith("_ZN") for k in names), "the log keeps the mangled symbols")

    rep = subprocess.run([cli, "report", "--json", log], env=env, capture_output=True, text=True, timeout=60)
    warm = ""
    try:
        warm = {x["finding"]: x for x in json.loads(rep.stdout)["findings"]}.get("warm-up", {}).get("sentence", "")
    except Exception as e:  # noqa: BLE001
        print(f"    report --json unreadable: {e}")
    print(f"    warm-up: {warm[:300]}")
    check(warm and "kernel" in warm and "cannot name" not in warm,
          "the report's warm-up advice names kernels and calls no image one capguard cannot name")

    # guard mode: the load is refused on 12.2, and recorded with its options
    prime = os.path.join(out, "names.cgp")
    guard_log = os.path.join(out, "guard.jsonl")
    guard = run_under(cli, ["--emulate-driver", "12020", "--log", guard_log, "--prime", prime],
                      [sys.executable, __file__, "--worker"], env, os.path.join(out, "guard-run.txt"), 120)
    lst = subprocess.run([cli, "prime", "list", prime], env=env, capture_output=True, text=True, timeout=60)
    with open(os.path.join(out, "prime-list.txt"), "w") as f:
        f.write(lst.stdout + lst.stderr)
    print("    prime list:\n      " + "\n      ".join(lst.stdout.splitlines()[:6]))
    print(f"    prime list exit {lst.returncode}, stderr: {lst.stderr.strip()[:600]}")
    glazy = [e for e in read_events(guard_log) if e.get("event") == "module-load" and is_lazy(e)]
    check(glazy and all(e.get("load_options") == "CU_LIBRARY_BINARY_IS_PRESERVED=1" for e in glazy),
          "the guard run's lazy load events say its option: CU_LIBRARY_BINARY_IS_PRESERVED=1")
    check("options: CU_LIBRARY_BINARY_IS_PRESERVED=1" in lst.stdout, "prime list shows the fatbin with its option")
    # next: and the lines of its commands, up to the next "capguard: " line
    nxt, on = [], False
    for line in guard.stderr.splitlines():
        if line.startswith("capguard: "):
            on = line.startswith("capguard: next:")
        if on:
            nxt.append(line)
    said = "\n".join(nxt)
    ok = ("run it again" in said and "CUDA_MODULE_LOADING=EAGER" not in said and
          "make it before capture" not in said and "check the priming file" not in said)
    if not ok:
        print(f"    guard run exit {guard.returncode}, its stderr's end:\n      " +
              "\n      ".join(guard.stderr.splitlines()[-12:]))
    else:
        print("    next:\n      " + "\n      ".join(nxt)[:900])
    check(ok, "the guard run's next: says run it again, with no advice to change the program")
    again = run_under(cli, ["--emulate-driver", "12020", "--log", os.path.join(out, "again.jsonl"), "--prime", prime],
                      [sys.executable, __file__, "--worker"], env, os.path.join(out, "again-run.txt"), 120)
    served = [e for e in read_events(os.path.join(out, "again.jsonl"))
              if e.get("event") == "module-load" and e.get("verdict") == "served"]
    check(again.returncode == 0 and served, f"the next run is served the fatbin and captures (exit {again.returncode}, "
                                            f"{len(served)} served)")
    return check.finish(out)


if __name__ == "__main__":
    sys.exit(main())
