"""cg_python_stack and cg_stack_where seen from a real interpreter.

Usage: test_python_stack.py PATH/TO/pyprobe.so [--bench]

The probe is called through ctypes.CDLL, which releases the GIL around the
foreign call as Triton's launcher does, from inside nested functions of this
file; the frames must come back innermost first with this file's name, the
functions' names and the lines of the calls (found from the markers below,
not hard-coded). Also from a second thread, from eight threads at once,
through PyDLL (GIL held), with a deep stack (capped), and with a tiny string
buffer (truncated); names outside ASCII; and no reference count of the
objects read changes."""
import ctypes
import sys
import threading

SELF = None  # co_filename of this file, as the interpreter records it


def marker_line(tag):
    with open(__file__, encoding="utf-8") as f:
        for no, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + tag):
                return no
    raise AssertionError("marker %s not found" % tag)


def parse(text):
    frames, where = [], None
    for row in text.splitlines():
        parts = row.split("\t")
        if parts[0] == "py":
            frames.append((parts[1], int(parts[2]), parts[3]))
        elif parts[0] == "where":
            where = parts[1]
    return frames, where


class Probe:
    def __init__(self, lib):
        self.lib = lib
        for name in ("probe", "probe_ex"):
            getattr(lib, name).restype = ctypes.c_int
        self.lib.probe.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.lib.probe_ex.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]

    def call(self, max_frames=48, bufcap=16384):
        out = ctypes.create_string_buffer(1 << 20)
        n = self.lib.probe_ex(out, len(out), max_frames, bufcap)  # probe-call
        assert n >= 0, "probe output did not fit"
        frames, where = parse(out.value.decode())
        assert len(frames) == n, (n, frames)
        return frames, where


def level_two(probe, **kw):
    result = probe.call(**kw)  # level-two
    return result


def level_one(probe, **kw):
    result = level_two(probe, **kw)  # level-one
    return result


def expect_top(frames, where, outer):
    """The three innermost frames, then `outer` (func, line) as the fourth."""
    want = [
        (SELF, marker_line("probe-call"), "call"),
        (SELF, marker_line("level-two"), "level_two"),
        (SELF, marker_line("level-one"), "level_one"),
        (SELF, outer[1], outer[0]),
    ]
    assert frames[:4] == want, "frames:\n  %s\nwanted:\n  %s" % (
        "\n  ".join(map(str, frames[:6])), "\n  ".join(map(str, want)))
    assert where == "%s:%d in call" % (SELF, marker_line("probe-call")), where


def check_main_thread(probe):
    frames, where = level_one(probe)  # main-call
    expect_top(frames, where, ("check_main_thread", marker_line("main-call")))
    assert frames[4:] == [(SELF, marker_line("main-check"), "main"),
                          (SELF, marker_line("main-main"), "<module>")], frames[4:]


def check_second_thread(probe):
    seen = {}

    def worker():
        seen["r"] = level_one(probe)  # thread-call

    t = threading.Thread(target=worker, name="probe-thread")
    t.start()
    t.join()
    frames, where = seen["r"]
    expect_top(frames, where, ("worker", marker_line("thread-call")))
    funcs = [f[2] for f in frames]
    # threading's run -> _bootstrap_inner -> _bootstrap, outermost last
    assert funcs[-1] == "_bootstrap" and "run" in funcs, funcs
    assert all(f[0].endswith("threading.py") for f in frames[4:]), frames[4:]


def check_concurrent_threads(probe):
    """Eight threads inside the probe at once (the GIL is released there):
    each must see its own stack."""
    errors, barrier = [], threading.Barrier(8)

    def worker(k):
        try:
            barrier.wait()
            for _ in range(25):
                frames, where = level_one(probe)  # concurrent-call
                expect_top(frames, where, ("worker", marker_line("concurrent-call")))
        except Exception as e:  # reported below, from the main thread
            errors.append("thread %d: %r" % (k, e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def check_references_kept(probe):
    """Reading the frames without the GIL touches no reference count:
    3.9's and 3.10's dump took one on each frame's code object with plain
    increments, which raced between threads (a count lost or gained in most
    runs of this check; once, a code object freed under its function and a
    crash in the collector at exit)."""
    codes = [level_one.__code__, level_two.__code__, Probe.call.__code__]

    def worker():
        for _ in range(1000):
            level_one(probe)

    for _ in range(3):  # a race: one round of the old dump's showed it about half the time
        before = [sys.getrefcount(c) for c in codes]
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = [sys.getrefcount(c) for c in codes]
        assert after == before, "reference counts of the code objects read: %s before, %s after" % (before, after)


def dumped(text):
    """A name as the interpreter's dump writes it: ASCII, the rest escaped."""
    return "".join(c if ord(c) < 128 else "\\x%02x" % ord(c) if ord(c) < 256 else
                   "\\u%04x" % ord(c) if ord(c) < 65536 else "\\U%08x" % ord(c) for c in text)


def check_names_not_ascii(probe):
    """A file and functions named outside ASCII, one of each of a str's
    three widths (Latin-1, the BMP, beyond it): under 3.9 and 3.10, whose
    frames capguard reads in place, the names as they are (UTF-8); under
    the others, as the interpreter's dump escapes them."""
    file, outer, inner = "ファイル🐍é.py", "日本", "größe"
    src = "def %s(p):\n    return p.call()\n\ndef %s(p):\n    return %s(p)\n" % (inner, outer, inner)
    ns = {}
    exec(compile(src, file, "exec"), ns)
    frames, _ = ns[outer](probe)
    named = (lambda t: t) if sys.version_info[:2] in ((3, 9), (3, 10)) else dumped
    want = [(named(file), 2, named(inner)), (named(file), 5, named(outer))]
    assert frames[1:3] == want, "frames:\n  %s\nwanted:\n  %s" % (frames[1:3], want)


def check_gil_held(path):
    probe = Probe(ctypes.PyDLL(path))
    frames, where = level_one(probe)  # pydll-call
    expect_top(frames, where, ("check_gil_held", marker_line("pydll-call")))


def recurse(probe, k, **kw):
    if k == 0:
        return level_one(probe, **kw)  # recurse-bottom
    return recurse(probe, k - 1, **kw)  # recurse-step


def check_deep_stack_capped(probe):
    frames, _ = recurse(probe, 150, max_frames=48)
    assert len(frames) == 48, len(frames)
    assert frames[3] == (SELF, marker_line("recurse-bottom"), "recurse"), frames[3]
    assert all(f == (SELF, marker_line("recurse-step"), "recurse") for f in frames[4:]), frames[4:]


def check_small_buffer_truncates(probe):
    """Each string needs its bytes and a NUL; frames that do not fit whole
    are dropped from the outside in, never cut."""
    full, _ = level_one(probe)
    need = [len(f[0].encode()) + len(f[2].encode()) + 2 for f in full[:3]]
    for cap in (1, 8, need[0] - 1, need[0], need[0] + need[1] - 1, sum(need)):
        frames, _ = level_one(probe, bufcap=cap)
        fit = sum(1 for k in range(1, 4) if sum(need[:k]) <= cap)
        assert len(frames) == fit, (cap, fit, frames)
        assert frames == full[:fit], (cap, frames)


def bench(path):
    lib = ctypes.CDLL(path)
    for name in ("bench_python", "bench_native", "bench_where"):
        getattr(lib, name).restype = ctypes.c_double
        getattr(lib, name).argtypes = [ctypes.c_int]

    def nest(k, fn):
        return fn(2000) if k == 0 else nest(k - 1, fn)

    for depth in (0, 20):
        print("depth %2d: python %.1f us, native %.1f us, where %.1f us per call" % (
            depth, nest(depth, lib.bench_python), nest(depth, lib.bench_native),
            nest(depth, lib.bench_where)))


def main():
    global SELF
    SELF = main.__code__.co_filename
    path = sys.argv[1]
    if "--bench" in sys.argv:
        bench(path)
        return
    probe = Probe(ctypes.CDLL(path))
    check_main_thread(probe)  # main-check
    check_second_thread(probe)
    check_concurrent_threads(probe)
    check_references_kept(probe)
    check_names_not_ascii(probe)
    check_gil_held(path)
    check_deep_stack_capped(probe)
    check_small_buffer_truncates(probe)
    print("python %s: 8 checks passed" % sys.version.split()[0])


if __name__ == "__main__":
    main()  # main-main
