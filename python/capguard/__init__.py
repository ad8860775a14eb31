"""capguard: finds the CUDA driver calls that break CUDA graph captures.

The package holds capguard's native command (bin/capguard, with
bin/capguard-selftest for `capguard doctor`) and its preload library
(lib/libcapguard.so), laid out like an install prefix so the command finds
its shim next to itself (<bin>/../lib). `capguard` and `python -m capguard`
hand their arguments to the native command: `capguard run -- vllm serve ...`.
"""
import os
import sys

__all__ = ["command_path", "shim_path", "main"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def command_path():
    """Path of the native capguard command in this package."""
    return os.path.join(_HERE, "bin", "capguard")


def shim_path():
    """Path of libcapguard.so in this package (what `capguard run` preloads)."""
    return os.path.join(_HERE, "lib", "libcapguard.so")


def main(argv=None):
    """Replace this Python process with the native command: its exit status,
    signals and stdio are the command's own, and `capguard run` leaves no
    Python process between the caller and the program it runs."""
    args = sys.argv[1:] if argv is None else list(argv)
    exe = command_path()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(exe, ["capguard"] + args)
    except OSError as e:
        sys.stderr.write("capguard: cannot run %s: %s; reinstall capguard\n" % (exe, e.strerror))
        return 125
