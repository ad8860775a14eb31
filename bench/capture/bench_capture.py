#!/usr/bin/env python3
"""What a capture's begin and end cost under capguard in a Python process,
over the fake driver. Goal: at most 3 us more per begin+end than
the driver's own, in guard mode with no log.

The process looks like a serving engine's: CPython with many shared
libraries loaded (every extension module of the standard library and the
system libraries they bring, plus more sonames when present), and the
driver's begin and end are called as torch calls them: from a native
library with a large dynamic symbol table (libbench_wide_caller.so, 100,000
exported functions; see gen_wide.py) through a libcudart (a stand-in,
libcudart_capguard_bench.so, that reaches the driver three frames down),
itself called through ctypes from a Python function DEPTH frames deep.

Each variant runs in its own process; the variants alternate, and each
runs ROUNDS times. A process times each begin+end pair alone
(time.perf_counter_ns around the two ctypes calls, which both variants pay)
and prints the median; a variant's figure is the median of its processes'.

Usage: bench_capture.py BUILDDIR [--captures N] [--rounds R] [--depth D]
                        [--variants driver,guard,guard+log,report] [--goal-us 3]
Exit 1 when guard mode with no log misses the goal, 2 when the benchmark
cannot run."""
import argparse
import ctypes
import glob
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

# Common sonames loaded (when present) on top of the standard library's
# extension modules, as a big framework's process has them.
EXTRA_SONAMES = [
    "libz.so.1", "libbz2.so.1.0", "liblzma.so.5", "libzstd.so.1", "libssl.so.3", "libcrypto.so.3",
    "libsqlite3.so.0", "libexpat.so.1", "libffi.so.8", "libuuid.so.1", "libstdc++.so.6", "libgomp.so.1",
    "libgcc_s.so.1", "libxml2.so.2", "libcurl.so.4", "libgmp.so.10", "libmpfr.so.6", "libpcre2-8.so.0",
    "libelf.so.1", "libdw.so.1", "libjansson.so.4", "libcheck.so.0", "libsubunit.so.0", "libsystemd.so.0",
    "libcap.so.2", "libacl.so.1", "libattr.so.1", "libselinux.so.1", "libkrb5.so.3", "libgssapi_krb5.so.2",
    "libk5crypto.so.3", "libcom_err.so.2", "libkeyutils.so.1", "libidn2.so.0", "libunistring.so.2",
    "libnghttp2.so.14", "librtmp.so.1", "libssh2.so.1", "libpsl.so.5", "libldap-2.5.so.0", "liblber-2.5.so.0",
    "libsasl2.so.2", "libbrotlidec.so.1", "libbrotlicommon.so.1", "libgnutls.so.30", "libhogweed.so.6",
    "libnettle.so.8", "libtasn1.so.6", "libp11-kit.so.0", "libgpg-error.so.0", "libgcrypt.so.20",
    "liblz4.so.1", "libreadline.so.8", "libncursesw.so.6", "libtinfo.so.6", "libedit.so.2", "libbsd.so.0",
    "libmd.so.0", "libgdbm.so.6", "libtcl8.6.so", "libmagic.so.1", "libarchive.so.13", "libyaml-0.so.2",
]


def load_libraries():
    """Imports every extension module of the standard library and loads the
    extra sonames; returns how many shared objects the process has mapped."""
    dynload = sysconfig.get_path("platstdlib") + "/lib-dynload"
    for path in sorted(glob.glob(dynload + "/*.so")):
        name = os.path.basename(path).split(".")[0]
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 (a module that cannot load here is no part of the figure)
            pass
    for so in EXTRA_SONAMES:
        try:
            ctypes.CDLL(so)
        except OSError:
            pass
    objects = set()
    with open("/proc/self/maps") as f:
        for row in f:
            parts = row.split()
            if len(parts) >= 6 and ".so" in parts[5]:
                objects.add(parts[5])
    return len(objects)


def child(args):
    n_objects = load_libraries()
    cu = ctypes.CDLL("libcuda.so.1")
    wide = ctypes.CDLL(args.wide)
    P = ctypes.c_void_p
    dev, ctx, s, g = ctypes.c_int(), P(), P(), P()
    assert cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cu.cuCtxSetCurrent(ctx) == 0
    assert cu.cuStreamCreate(ctypes.byref(s), 1) == 0
    # Through dlsym, as ctypes finds them: capguard's wrappers when preloaded.
    begin_fn = ctypes.cast(cu.cuStreamBeginCapture_v2, P)
    end_fn = ctypes.cast(cu.cuStreamEndCapture, P)
    begin, end = wide.cg_bench_begin, wide.cg_bench_end
    begin.argtypes = [P, P, ctypes.c_int]
    end.argtypes = [P, P, ctypes.POINTER(P)]
    gref = ctypes.byref(g)
    destroy = cu.cuGraphDestroy
    clock = time.perf_counter_ns

    def captures(n, out):
        for _ in range(n):
            t0 = clock()
            r1 = begin(begin_fn, s, 0)  # the begin the report names
            r2 = end(end_fn, s, gref)
            t1 = clock()
            if r1 or r2:
                raise SystemExit("capture failed: begin %d end %d" % (r1, r2))
            destroy(g)
            out.append(t1 - t0)

    def deeper(d, n, out):
        if d > 0:
            return deeper(d - 1, n, out)
        return captures(n, out)

    warm = []
    deeper(args.depth, 200, warm)
    times = []
    deeper(args.depth, args.captures, times)
    print("objects %d median_ns %d" % (n_objects, statistics.median(times)))


VARIANTS = {
    "driver": {},
    "guard": {"CAPGUARD_MODE": "guard"},
    "guard+log": {"CAPGUARD_MODE": "guard", "CAPGUARD_LOG": "{tmp}/log.jsonl"},
    "guard+metrics": {"CAPGUARD_MODE": "guard", "CAPGUARD_METRICS": "{tmp}"},
    "report": {"CAPGUARD_MODE": "report"},
    "off": {"CAPGUARD_MODE": "off"},
}


def parent(args):
    build = os.path.abspath(args.build)
    shim = os.path.join(build, "shim", "libcapguard.so")
    fake = os.path.join(build, "tests", "fakecuda")
    wide = os.path.join(build, "bench", "capture", "libbench_wide_caller.so")
    for need in (shim, os.path.join(fake, "libcuda.so.1"), wide):
        if not os.path.exists(need):
            print("bench_capture: %s is missing (build the project first)" % need, file=sys.stderr)
            return 2
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            print("bench_capture: unknown variant %r (known: %s)" % (v, ", ".join(VARIANTS)), file=sys.stderr)
            return 2
    figures = {v: [] for v in variants}
    objects = None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = variants if r % 2 == 0 else variants[::-1]
            for v in order:
                env = {k: val for k, val in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
                env.pop("LD_PRELOAD", None)
                env["LD_LIBRARY_PATH"] = fake
                # A priming file that does not exist yet, as on a first run: the
                # begin still asks whether there is one to preload.
                env["CAPGUARD_PRIME"] = os.path.join(tmp, "prime-%s" % v)
                if v != "driver":
                    env["LD_PRELOAD"] = shim
                for k, val in VARIANTS[v].items():
                    env[k] = val.format(tmp=tmp)
                p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--wide", wide,
                                    "--captures", str(args.captures), "--depth", str(args.depth)],
                                   env=env, capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    print("bench_capture: variant %s failed (%d):\n%s" % (v, p.returncode, p.stderr), file=sys.stderr)
                    return 2
                words = p.stdout.split()
                objects = int(words[1])
                figures[v].append(int(words[3]))
    print("# %d captures a process, %d processes a variant, alternating; python %s; %d shared objects mapped; "
          "begin %d Python frames deep, called through a libcudart from a library of 100,000 symbols"
          % (args.captures, args.rounds, sys.version.split()[0], objects, args.depth))
    print("%-10s %12s %12s   %s" % ("variant", "median ns", "over driver", "each process's median"))
    base = statistics.median(figures["driver"]) if "driver" in figures else None
    for v in variants:
        m = statistics.median(figures[v])
        over = "%+.0f" % (m - base) if base is not None else "-"
        print("%-10s %12.0f %12s   %s" % (v, m, over, " ".join(str(x) for x in figures[v])))
    if base is None or "guard" not in figures:
        return 0
    over = (statistics.median(figures["guard"]) - base) / 1000.0
    ok = over <= args.goal_us
    print("guard mode, no log: %+.2f us a capture over the driver's own <= %.1f us: %s"
          % (over, args.goal_us, "yes" if ok else "no"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--wide")
    ap.add_argument("--captures", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--variants", default="driver,guard,guard+log")
    ap.add_argument("--goal-us", type=float, default=3.0)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
