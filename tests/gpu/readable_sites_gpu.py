#!/usr/bin/env python3
"""capguard's own stderr lines name torch's native frames demangled, on a
real GPU, under 60 s: a torch.cuda.graph capture broken by
torch.cuda.synchronize() inside it, under the shim in report mode. Checks
that the event's "capture began:" line names
at::cuda::CUDAGraph::capture_begin demangled (not _ZN2at4cuda9CUDAGraph...),
that no mangled torch name is left in stderr's native frames, that the log
keeps the same began text, and that capguard report prints that site as
stderr did.
Usage (repo root): python3 tests/gpu/readable_sites_gpu.py [--build build]
Prints PASS/FAIL lines and the began line; exits 0 when every check passed,
1 otherwise, 77 without a GPU or torch."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import torch
x = torch.ones(1 << 20, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x * 2  # warm-up outside the capture
torch.cuda.current_stream().wait_stream(s)
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        y = x * 2
        torch.cuda.synchronize()  # breaks the capture
except Exception as e:
    print("capture raised:", str(e).splitlines()[0] if str(e) else type(e).__name__)
print("child done")
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    shim = os.path.abspath(os.path.join(args.build, "shim", "libcapguard.so"))
    cli = os.path.abspath(os.path.join(args.build, "tools", "capguard"))
    try:
        import torch
        if not torch.cuda.is_available():
            print("SKIP: no GPU")
            return 77
    except ImportError as e:
        print("SKIP: no torch (%s)" % e)
        return 77
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="capguard-sites-")
    log = os.path.join(tmp, "log.jsonl")
    script = os.path.join(tmp, "break_capture.py")
    with open(script, "w") as f:
        f.write(CHILD)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGUARD_")}
    env.update(LD_PRELOAD=shim, CAPGUARD_MODE="report", CAPGUARD_LOG=log,
               CAPGUARD_PRIME=os.path.join(tmp, "prime.cgp"), PYTHONUNBUFFERED="1")
    p = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=50)
    failed = 0

    def check(cond, what):
        nonlocal failed
        print(("PASS " if cond else "FAIL ") + what, flush=True)
        failed += 0 if cond else 1

    check(p.returncode == 0 and "child done" in p.stdout, "the torch program ran (rc %d)" % p.returncode)
    # an event's "capture began:" line, else the broken capture's "began at ... ) broke"
    began = re.findall(r"^  capture began: (.*)$", p.stderr, re.M) + \
        re.findall(r"^capguard: capture \d+ \(stream 0x[0-9a-f]+, [a-z-]+, began at (.*)\) broke", p.stderr, re.M)
    print("began line:", began[0] if began else "(none)")
    check(bool(began), "a line says where the capture began")
    check(any("at::cuda::CUDAGraph::capture_begin(" in b for b in began),
          "the begin site names at::cuda::CUDAGraph::capture_begin demangled")
    check("_ZN2at4cuda9CUDAGraph" not in p.stderr, "no mangled CUDAGraph name on stderr")
    frames = re.findall(r"^    #\d+ (.*) \[0x[0-9a-f]+\]$", p.stderr, re.M)
    mangled = [f for f in frames if re.search(r"\(_Z\w+\+0x", f)]
    check(frames and not mangled, "stderr's native frames demangled (%d frames, %d mangled: %s)"
          % (len(frames), len(mangled), mangled[:2]))
    records = []
    if os.path.exists(log):
        with open(log) as f:
            records = [json.loads(line) for line in f if line.strip()]
    logged = [r["capture"]["began"] for r in records if r.get("type") == "event" and r.get("capture")] + \
        [r.get("began") for r in records if r.get("type") == "capture"]
    check(bool(began) and began[0] in logged, "the log's began is stderr's")
    rep = subprocess.run([cli, "report", log], capture_output=True, text=True, timeout=30)
    native = re.search(r"\((lib\S+\(at::cuda::CUDAGraph::capture_begin\(.*\)\+0x[0-9a-f]+\)(?: at \S+)?)\)$",
                       began[0]) if began else None
    check(bool(native) and native.group(1) in rep.stdout,
          "capguard report prints the native begin site as stderr does")
    print("took %.1f s" % (time.time() - start))
    if failed:
        sys.stdout.write("--- stderr of the torch program:\n" + p.stderr[-4000:] + "\n")
    print("%s: %d failed" % ("FAIL" if failed else "OK", failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
