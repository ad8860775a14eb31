"""capguard's own messages: configuration warnings said
once per process tree, environment values quoted without raw control
characters, priming switched off with a reason when there is nowhere to keep
the file, and a read-only priming file that was read and served not called
"not used"."""
import os
import subprocess
import tempfile
import unittest

from routes_common import CUBIN, FAKE_DIR, PROBE_DIRECT, SHIM

SCRIPT = "/bin/true; /bin/true; sh -c /bin/true"  # the shell and four children


def clean_env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("CAPGUARD_", "FAKECUDA_"))}
    e["LD_PRELOAD"] = SHIM
    e.update(extra)
    return e


def run_sh(script, env):
    return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60)


def capguard_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("capguard:")]


class ConfigWarnings(unittest.TestCase):
    def test_said_once_per_process_tree(self):
        p = run_sh(SCRIPT, clean_env(CAPGUARD_MODE="bogus"))
        self.assertEqual(p.returncode, 0)
        lines = capguard_lines(p.stderr)
        self.assertEqual(lines, ["capguard: CAPGUARD_MODE=bogus is not a mode (guard, report, off); using guard, the default"])

    def test_an_unusable_log_is_said_once_per_process_tree(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "fifo")
            os.mkfifo(fifo)
            for log, why in ((os.path.join(tmp, "no", "such", "dir", "log"), "cannot open log"),
                             (fifo, "a FIFO with no reader")):
                p = run_sh(SCRIPT, clean_env(CAPGUARD_LOG=log))
                self.assertEqual(p.returncode, 0)
                lines = capguard_lines(p.stderr)
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn(why, lines[0])

    def test_a_child_with_other_settings_speaks(self):
        p = run_sh("/bin/true; CAPGUARD_MODE=other /bin/true; /bin/true", clean_env(CAPGUARD_MODE="bogus"))
        lines = capguard_lines(p.stderr)
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertIn("CAPGUARD_MODE=bogus", lines[0])
        self.assertIn("CAPGUARD_MODE=other", lines[1])

    def test_values_are_escaped(self):
        p = run_sh("/bin/true", clean_env(CAPGUARD_MODE="\x1b[31mred\nsecond line\x07", CAPGUARD_RESCUE="\r"))
        self.assertNotIn("\x1b", p.stderr)
        self.assertNotIn("\x07", p.stderr)
        self.assertNotIn("\r", p.stderr)
        lines = capguard_lines(p.stderr)
        self.assertEqual(len(p.stderr.splitlines()), len(lines), p.stderr)  # no line broken in two
        self.assertIn("capguard: CAPGUARD_MODE=\\x1b[31mred\\x0asecond line\\x07 is not a mode", lines[0])
        self.assertIn("capguard: CAPGUARD_RESCUE=\\x0d is not understood", lines[1])

    def test_priming_off_without_a_place_said_once(self):
        env = clean_env()
        for k in ("HOME", "XDG_CACHE_HOME"):
            env.pop(k, None)
        p = run_sh(SCRIPT, env)
        lines = capguard_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("priming is off: CAPGUARD_PRIME is not set and neither XDG_CACHE_HOME nor HOME", lines[0])
        # Only guard mode primes; and a set CAPGUARD_PRIME needs no HOME.
        self.assertEqual(capguard_lines(run_sh(SCRIPT, dict(env, CAPGUARD_MODE="report")).stderr), [])
        self.assertEqual(capguard_lines(run_sh(SCRIPT, dict(env, CAPGUARD_PRIME="/tmp/x.cgp")).stderr), [])


class ReadOnlyPrimingFile(unittest.TestCase):
    def probe(self, prime, args, as_user=None):
        env = clean_env(LD_LIBRARY_PATH=FAKE_DIR, CAPGUARD_PRIME=prime, CAPGUARD_MODE="guard")
        def drop():
            if as_user is not None:
                os.setgid(as_user)
                os.setuid(as_user)
        return subprocess.run([PROBE_DIRECT, "--route", "direct"] + args, env=env, capture_output=True, text=True,
                              timeout=60, preexec_fn=drop)

    def test_read_and_served_is_not_called_not_used(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            prime = os.path.join(tmp, "prime.cgp")
            r1 = self.probe(prime, ["--op", "load", "--image", CUBIN])
            self.assertEqual(r1.returncode, 0, r1.stderr)
            self.assertTrue(os.path.getsize(prime) > 0)
            # Root may write any file: the second run is made as nobody, owning a read-only file.
            user = 65534 if os.geteuid() == 0 else None
            if user is not None:
                os.chown(prime, user, user)
            os.chmod(prime, 0o444)
            # Two identical loads: the first is served, the second (nothing left
            # to serve) reaches the driver and is to be recorded, which fails.
            r2 = self.probe(prime, ["--op", "load", "--image", CUBIN, "--repeat", "2"], as_user=user)
            self.assertEqual(r2.returncode, 0, r2.stderr)
            self.assertIn("op_result=0", r2.stdout)
            self.assertRegex(r2.stderr, r"priming: 1 preloaded, 1 served")
            self.assertNotIn("not used", r2.stderr)
            warn = [l for l in r2.stderr.splitlines() if l.startswith("capguard: priming file")]
            self.assertEqual(len(warn), 1, r2.stderr)
            self.assertIn("cannot open it for writing (Permission denied); nothing more recorded, "
                          "what it holds is still used", warn[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
