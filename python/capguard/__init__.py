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


def _launcher_on_path():
    """Whether the `capguard` on PATH is a launcher of this package: a script
    that names this interpreter and capguard (a console script's shebang, or
    a shell wrapper that runs `python -m capguard`)."""
    import shutil
    found = shutil.which("capguard")
    if not found:
        return False
    try:
        with open(found, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"#!") and b"capguard" in head and os.fsencode(sys.executable) in head


def main(argv=None):
    """Replace this Python process with the native command: its exit status,
    signals and stdio are the command's own, and `capguard run` leaves no
    Python process between the caller and the program it runs."""
    args = sys.argv[1:] if argv is None else list(argv)
    exe = command_path()
    if _launcher_on_path():
        # The command prints commands to paste: "capguard ..." when the
        # capguard a shell finds is this package's launcher, not only when it
        # is the native command itself (tools/meaning/rerun_command.c).
        os.environ["CAPGUARD_LAUNCHER_ON_PATH"] = "1"
    if os.path.basename(sys.argv[0]) == "capguard" and os.access(sys.argv[0], os.X_OK):
        # run by its launcher: a command to paste names the launcher, which
        # a person ran, not the package's inner program
        os.environ["CAPGUARD_LAUNCHER"] = os.path.abspath(sys.argv[0])
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(exe, ["capguard"] + args)
    except OSError as e:
        sys.stderr.write("capguard: cannot run %s: %s; reinstall capguard\n" % (exe, e.strerror))
        return 125
