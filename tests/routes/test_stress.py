"""Deferred unloads never break a capture, and what
capguard reports is what the driver did to each call.

stress_capture runs THREADS threads, each ITERATIONS captures, in every
pairing of capture mode and thread-interaction mode, loading and unloading
modules inside and between captures, over the fake driver, in each of
capguard's modes. The fake's trace (FAKECUDA_TRACE with FAKECUDA_TRACE_RULE:
each call's result and whether the fake's own rule prohibited it) is then
compared with capguard's log call by call, thread by thread, and the fake's
live-module count at exit (FAKECUDA_STATS) shows any unload lost.

CG_STRESS_THREADS and CG_STRESS_ITERATIONS scale it (defaults 16 x 300, a
few seconds per run on a 2-core machine; the heavier 16 x 5000 is
CG_STRESS_ITERATIONS=5000)."""
import collections
import json
import os
import re
import subprocess
import tempfile
import unittest

from routes_common import CUBIN, FAKE_DIR, SHIM

STRESS = os.environ["CG_STRESS"]
THREADS = int(os.environ.get("CG_STRESS_THREADS", "16"))
ITERATIONS = int(os.environ.get("CG_STRESS_ITERATIONS", "300"))
MODULE_CALLS = {"cuModuleLoadData", "cuModuleUnload"}
TRACE_LINE = re.compile(r"(\S+) tid=(\d+) capturing=(\d+) result=(-?\d+) prohibited=([01])")


def stress(mode, driver):
    with tempfile.TemporaryDirectory() as tmp:
        paths = {k: os.path.join(tmp, k) for k in ("log", "trace", "stats")}
        env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR, LD_PRELOAD=SHIM, CAPGUARD_MODE=mode,
                   CAPGUARD_LOG=paths["log"], CAPGUARD_PRIME=os.path.join(tmp, "none", "prime.cgp"),
                   FAKECUDA_DRIVER_VERSION=str(driver), FAKECUDA_TRACE=paths["trace"],
                   FAKECUDA_TRACE_RULE="1", FAKECUDA_STATS=paths["stats"])
        if os.environ.get("CG_SANITIZED") == "1":  # this program frees all it allocates: check the shim's
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "").replace("detect_leaks=0", "detect_leaks=1")
        p = subprocess.run([STRESS, CUBIN, str(THREADS), str(ITERATIONS)], env=env, capture_output=True,
                           text=True, timeout=600)
        out = {"rc": p.returncode, "stderr": p.stderr}
        out["totals"] = dict((k, int(v)) for k, v in (l.split("=") for l in p.stdout.split()))
        out["trace"] = []
        with open(paths["trace"]) as f:
            for line in f:
                m = TRACE_LINE.fullmatch(line.rstrip("\n"))
                assert m, line
                out["trace"].append((m[1], int(m[2]), int(m[4]), m[5] == "1"))
        out["log"] = []
        if os.path.exists(paths["log"]):
            with open(paths["log"]) as f:
                out["log"] = [json.loads(l) for l in f]
        with open(paths["stats"]) as f:
            out["stats"] = dict(l.strip().split("=") for l in f)
        return out


class Stress(unittest.TestCase):
    def check_agreement(self, run, mode, driver):
        """Per thread, in order: every call the fake's rule prohibited is one
        logged event that reached the driver, with the driver's own result;
        and no event claims a driver answer for a call the driver did not
        see as prohibited."""
        trace_by_tid = collections.defaultdict(list)
        for name, tid, result, prohibited in run["trace"]:
            if name in MODULE_CALLS and prohibited:
                trace_by_tid[tid].append((name, result))
        events_by_tid = collections.defaultdict(list)
        for e in run["log"]:
            if e.get("type") == "event" and e.get("driver_result", -1) >= 0:
                events_by_tid[e["tid"]].append((e["call"], e["driver_result"]))
        if mode == "off":
            self.assertEqual(run["log"], [])
            return
        self.assertEqual(set(trace_by_tid) | set(events_by_tid), set(trace_by_tid))
        for tid in trace_by_tid:
            self.assertEqual(events_by_tid.get(tid, []), trace_by_tid[tid], "thread %d" % tid)
        verdicts = collections.Counter(e["verdict"] for e in run["log"] if e.get("type") == "event")
        if driver < 12030:
            self.assertEqual(verdicts["allowed"], 0, "an old driver never allows a prohibited load")
        refusals = sum(1 for n, _, r, _ in run["trace"] if n in MODULE_CALLS and r == 900)
        self.assertEqual(verdicts["refused"], refusals, "every refusal is reported, and only those")

    def check_run(self, mode, driver):
        run = stress(mode, driver)
        t = run["totals"]
        self.assertEqual(run["rc"], 0, run["stderr"][-2000:])
        self.assertEqual(t["ends"], THREADS * ITERATIONS)
        self.assertEqual(t["begins_failed"], 0)
        ends = [r for n, _, r, _ in run["trace"] if n == "cuStreamEndCapture"]
        self.assertEqual(len(ends), t["ends"])
        self.assertEqual(sum(1 for r in ends if r != 0), t["ends_broken"], "broken as the driver says")
        self.check_agreement(run, mode, driver)
        # No module lost: everything loaded was unloaded by the driver by exit.
        self.assertEqual(t["cleanup_failed"], 0)
        self.assertEqual(run["stats"]["modules_live"], "0", "modules leaked")
        self.assertNotIn("deferred call on", run["stderr"])  # no failed deferred unload
        self.assertNotIn("deferred calls (", run["stderr"])  # none abandoned at exit
        unloads = [r for n, _, r, _ in run["trace"] if n == "cuModuleUnload"]
        loads_ok = sum(1 for n, _, r, _ in run["trace"] if n == "cuModuleLoadData" and r == 0)
        self.assertEqual(sum(1 for r in unloads if r == 0), loads_ok)
        verdicts = collections.Counter(e["verdict"] for e in run["log"] if e.get("type") == "event")
        print("%s %d: %d threads x %d captures, %d broken, %d loads, %d unload calls (%d refused by the driver), "
              "%d module calls the driver saw as prohibited%s; verdicts %s; modules live "
              "at exit %s" %
              (mode, driver, THREADS, ITERATIONS, t["ends_broken"], t["loads"], t["unload_calls"],
               t["unloads_failed"], sum(1 for c in run["trace"] if c[0] in MODULE_CALLS and c[3]),
               ", each one event in the log" if mode != "off" else " (off: no log)",
               dict(verdicts), run["stats"]["modules_live"]))
        return run

    def test_guard_13_0_breaks_nothing(self):
        run = self.check_run("guard", 13000)
        t = run["totals"]
        self.assertEqual(t["ends_broken"], 0)
        self.assertEqual(t["unloads_failed"], 0)
        self.assertEqual(t["loads_failed"], 0)
        self.assertFalse([c for c in run["trace"] if c[2] != 0 and c[0] in MODULE_CALLS])
        deferred = sum(1 for e in run["log"] if e.get("verdict") == "deferred")
        self.assertGreater(deferred, 0, "the stress never deferred an unload: it tests nothing")

    def test_guard_12_2(self):
        run = self.check_run("guard", 12020)
        # Loads the old driver refuses break captures (the program's own
        # doing, recorded for the next run); no unload ever does.
        self.assertFalse([c for c in run["trace"] if c[0] == "cuModuleUnload" and c[2] != 0])

    def test_report_13_0(self):
        run = self.check_run("report", 13000)
        self.assertGreater(run["totals"]["unloads_failed"], 0, "report mode must leave refusals to the driver")

    def test_report_12_2(self):
        self.check_run("report", 12020)

    def test_off_13_0(self):
        self.check_run("off", 13000)


if __name__ == "__main__":
    unittest.main(verbosity=2)
