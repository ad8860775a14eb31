"""The third matrix under capguard (driver-semantics.md), over the fake
driver, through the exported symbol and dlsym: work on the legacy stream
while a blocking stream captures (906), a wait on an event recorded before
the capture (905) and a graph launched into a capture (900) are named as the
first offender of the capture they broke; legacy-stream work while only a
non-blocking stream captures is reported as escaping the graph, once per call
site; what the program sees never changes."""
import concurrent.futures
import os
import re
import sys
import unittest

import routes_common

PROBE = os.environ["CG_ESCAPE_PROBE"]
PROBE_DIRECT = os.environ["CG_ESCAPE_PROBE_DIRECT"]
COPY_PROBE = os.environ["CG_COPY_PROBE"]
CUBIN = os.path.join(os.environ["CG_FAKE_DATA"], "kernels_sm90.cubin")

IMPLICIT, ISOLATION, UNSUPPORTED, INVALIDATED = 906, 905, 900, 901

# op: (the entry point capguard names, event kind)
LEGACY = {
    "legacy-launch": "cuLaunchKernel",
    "legacy-launch-ex": "cuLaunchKernelEx",
    "legacy-coop": "cuLaunchCooperativeKernel",
    "legacy-memcpy": "cuMemcpyHtoD_v2",
    "legacy-memset": "cuMemsetD8_v2",
}


def probe(args, route="direct", preload=True, mode="report", driver=13000, env=None):
    extra = {"CAPGUARD_MODE": mode, "CG_CUBIN": CUBIN}
    extra.update(env or {})
    exe = PROBE_DIRECT if route == "direct" else PROBE
    return routes_common.run_probe(args, route=route, env_extra=extra, preload=preload, probe=exe,
                                   driver=driver)


def the_capture(run):
    """The probe's second capture (its first only makes a graph to launch)."""
    caps = [c for c in run.of_type("capture") if c["id"] == 2]
    return caps[0] if caps else None


def copy_rows():
    """[(row name, exported name, how, pageable)] from tests/fakecuda/copy_calls.h:
    every copy and memset row but the ones the escape probe makes itself."""
    path = os.path.join(os.path.dirname(os.environ["CG_FAKE_DATA"]), "copy_calls.h")
    with open(path) as f:
        text = f.read()
    out = [(m.group(1), m.group(1).split(" ")[0], m.group(2), m.group(3) == "1")
           for m in re.finditer(r'\{ "([^"]+)", \w+, \'(\w)\', \w+, \w+, (\d) \}', text)]
    assert len(out) > 60, "too few rows read from " + path
    return out


def copy_probe(args, preload=True, driver=13000):
    return routes_common.run_probe(args, route="direct", preload=preload, driver=driver,
                                   env_extra={"CAPGUARD_MODE": "report", "CG_CUBIN": CUBIN}, probe=COPY_PROBE)


def in_parallel(fn, items):
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(fn, items))


class Copies(unittest.TestCase):
    """Every copy and memset row (synchronous, asynchronous with _ptsz, the 32-bit v1
    forms), each made through its exported symbol under capguard."""

    def only_capture(self, run):
        caps = run.of_type("capture")
        self.assertEqual(len(caps), 1, run.records)
        return caps[0]

    def test_each_on_the_legacy_stream_with_a_blocking_capture_is_named(self):
        def one(r):
            name, call, how, _ = r
            return r, copy_probe(["--op", name, "--blocking"], preload=False), copy_probe(["--op", name, "--blocking"])
        for (name, call, how, _), bare, run in in_parallel(one, copy_rows()):
            with self.subTest(row=name):
                self.assertEqual(bare.int("op_result"), IMPLICIT, bare.stdout + bare.stderr)
                self.assertEqual((run.int("op_result"), run.int("end_result")), (IMPLICIT, INVALIDATED))
                evs = [e for e in run.events if e["call"] == call]
                self.assertEqual(len(evs), 1, run.records)
                self.assertEqual((evs[0]["event"], evs[0]["verdict"], evs[0]["result"]),
                                 ("legacy-stream", "refused", IMPLICIT))
                cap = self.only_capture(run)
                self.assertEqual(cap["status"], "failed")
                self.assertIsNotNone(cap["broken_by"], cap)
                self.assertEqual(cap["broken_by"]["call"], call)
                self.assertIn("copy_probe", cap["broken_by"]["where"])

    def test_every_mode_and_thread(self):
        # One synchronous, one asynchronous and one _ptsz row in every column.
        for name, call in (("cuMemsetD2D16_v2", "cuMemsetD2D16_v2"), ("cuMemsetD8Async", "cuMemsetD8Async"),
                           ("cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoHAsync_v2_ptsz"),
                           ("cuMemcpyHtoD (v1)", "cuMemcpyHtoD")):
            for mode in ("global", "thread-local", "relaxed"):
                for thread in ("same", "other"):
                    with self.subTest(row=name, mode=mode, thread=thread):
                        run = copy_probe(["--op", name, "--blocking", "--mode", mode, "--thread", thread])
                        self.assertEqual(run.int("op_result"), IMPLICIT)
                        self.assertEqual(self.only_capture(run)["broken_by"]["call"], call)

    def test_each_on_the_legacy_stream_with_a_nonblocking_capture_escapes(self):
        def one(r):
            return r, copy_probe(["--op", r[0]])
        for (name, call, how, _), run in in_parallel(one, copy_rows()):
            with self.subTest(row=name):
                self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0), run.stderr)
                evs = run.events
                self.assertEqual(len(evs), 1, run.records)
                self.assertEqual((evs[0]["call"], evs[0]["event"], evs[0]["verdict"]),
                                 (call, "legacy-stream", "escaped"))
                self.assertTrue(any("copy_probe" in f for f in evs[0]["native_stack"]), evs[0])
                self.assertEqual(self.only_capture(run)["status"], "ended")

    def test_async_copies_into_the_capture_with_a_pageable_side_are_said(self):
        rows = [r for r in copy_rows() if r[2] != "S"]
        def one(r):
            args = ["--op", r[0], "--place", "capturing"]
            return r, copy_probe(args), copy_probe(args + ["--blocking"]), copy_probe(args + ["--pinned"])
        for (name, call, how, pageable), run, blocking, pinned in in_parallel(one, rows):
            with self.subTest(row=name):
                for r in (run, blocking, pinned):
                    self.assertEqual((r.int("op_result"), r.int("end_result")), (0, 0), r.stderr)
                    self.assertEqual(self.only_capture(r)["status"], "ended")
                self.assertEqual(pinned.events, [])  # page-locked: the replay's copy is what the program meant
                for r in (run, blocking):
                    if not pageable:
                        self.assertEqual(r.events, [], r.records)
                        continue
                    self.assertEqual([(e["call"], e["event"], e["verdict"]) for e in r.events],
                                     [(call, "pageable-copy", "escaped")])
                    self.assertIn("pageable host memory", r.stderr)
                    self.assertTrue(any("copy_probe" in f for f in r.events[0]["native_stack"]))

    def test_copies_racing_captures_on_six_threads(self):
        # Blocking and non-blocking captures begin and end on six threads
        # while every row's calls reach the driver from all of them: what the
        # program sees is what the driver says (0, 906, 901), and every
        # capture that ends broken is named, on drivers with and without the
        # log callback.
        for driver in (13000, 12020):
            with self.subTest(driver=driver):
                run = copy_probe(["--race", "6", "300"], driver=driver)
                self.assertEqual(run.rc, 0, run.stderr[-2000:])
                self.assertEqual(run.int("race_ops"), 1800)
                self.assertEqual(run.int("race_bad"), 0, run.stderr[-2000:])
                caps = run.of_type("capture")
                self.assertEqual(len(caps), 1800)
                failed = [c for c in caps if c["status"] == "failed"]
                self.assertEqual(len(failed), run.int("race_ends_broken"))
                self.assertGreater(len(failed), 100)  # the threads did meet
                # A copy that passed the wrapper's look when nothing captured
                # and was refused because a capture began in between goes
                # straight to the driver (a tail call, as launches): capguard
                # cannot name it, except through the driver's log callback
                # where the driver has one, and then not when the capture
                # ended before the callback's mark. Seen: 1 capture in about
                # 20 runs of 1,800, relaxed mode; bounded at 1% of the broken,
                # and said (docs/calls.md, "What is not named").
                unnamed = [c for c in failed if c["broken_by"] is None]
                print(f"driver {driver}: {len(failed)} broken captures, {len(unnamed)} without a first offender",
                      file=sys.stderr)
                self.assertLessEqual(len(unnamed), len(failed) // 100, unnamed)
                self.assertNotIn("internal", run.stderr)

    def test_ptsz_forms_on_the_per_thread_stream_are_the_drivers_business(self):
        rows = [r for r in copy_rows() if r[2] == "X"]
        self.assertGreater(len(rows), 10)
        for name, call, how, pageable in rows:
            with self.subTest(row=name):
                run = copy_probe(["--op", name, "--place", "per-thread", "--blocking"])
                self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0))
                self.assertEqual(run.events, [])


class Named(unittest.TestCase):
    def assert_named(self, run, call, kind, result):
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertEqual(run.int("op_result"), result, run.stdout)
        self.assertEqual(run.int("end_result"), INVALIDATED, run.stdout)
        evs = [e for e in run.events if e["call"] == call]
        self.assertEqual(len(evs), 1, run.records)
        self.assertEqual(evs[0]["event"], kind)
        self.assertEqual(evs[0]["verdict"], "refused")
        self.assertEqual(evs[0]["result"], result)
        cap = the_capture(run)
        self.assertIsNotNone(cap, run.records)
        self.assertEqual(cap["status"], "failed")
        self.assertIsNotNone(cap["broken_by"], cap)
        self.assertEqual(cap["broken_by"]["call"], call)
        self.assertIn("escape_probe", cap["broken_by"]["where"])

    def test_legacy_work_with_a_blocking_capture_is_named_every_mode_every_thread(self):
        for op, call in LEGACY.items():
            for mode in ("global", "thread-local", "relaxed"):
                for thread in ("same", "other"):
                    for route in ("direct", "dlsym"):
                        with self.subTest(op=op, mode=mode, thread=thread, route=route):
                            args = ["--op", op, "--blocking", "--mode", mode, "--thread", thread]
                            bare = probe(args, route=route, preload=False)
                            self.assertEqual(bare.int("op_result"), IMPLICIT)
                            run = probe(args, route=route)
                            self.assert_named(run, call, "legacy-stream", IMPLICIT)

    def test_wait_on_an_event_recorded_before_the_capture_is_named(self):
        for route in ("direct", "dlsym"):
            run = probe(["--op", "wait-before", "--blocking"], route=route)
            self.assert_named(run, "cuStreamWaitEvent", "stream-wait", ISOLATION)

    def test_graph_launched_into_the_capture_is_named(self):
        for route in ("direct", "dlsym"):
            run = probe(["--op", "graph-launch", "--blocking"], route=route)
            self.assert_named(run, "cuGraphLaunch", "graph-launch", UNSUPPORTED)

    def test_a_fork_never_joined_is_named_at_the_end(self):
        for route in ("direct", "dlsym"):
            run = probe(["--op", "fork-unjoined", "--blocking"], route=route)
            self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 904), run.stdout)
            cap = the_capture(run)
            self.assertEqual(cap["status"], "failed")
            self.assertEqual(cap["end_result"], 904)
            b = cap["broken_by"]
            self.assertIsNotNone(b, cap)
            self.assertRegex(b["call"], r"^cuStreamWaitEvent forking stream 0x[0-9a-f]+, never joined$")
            self.assertEqual((b["event"], b["verdict"], b["result"]), ("unjoined", "broke", 904))
            self.assertIn("escape_probe", b["where"])

    def test_work_after_a_join_names_that_fork(self):
        run = probe(["--op", "fork-joined-then-work", "--blocking"])
        self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 904), run.stdout)
        b = the_capture(run)["broken_by"]
        self.assertIsNotNone(b)
        self.assertRegex(b["call"], r"^cuStreamWaitEvent forking stream 0x[0-9a-f]+, never joined$")
        self.assertEqual((b["event"], b["result"]), ("unjoined", 904))

    def test_an_end_from_the_wrong_thread_names_that_thread(self):
        run = probe(["--op", "end-other", "--blocking"])
        self.assertEqual(run.int("end_result"), 908, run.stdout)
        cap = the_capture(run)
        b = cap["broken_by"]
        self.assertIsNotNone(b, cap)
        self.assertEqual((b["event"], b["verdict"], b["result"]), ("wrong-thread", "broke", 908))
        self.assertNotEqual(b["tid"], cap["tid"])   # the ending thread, not the one that began it
        self.assertIn("escape_probe", b["where"])

    def test_what_the_driver_allows_is_not_reported(self):
        for op in ("per-thread-launch", "wait-never"):
            for flags in ([], ["--blocking"]):
                with self.subTest(op=op, flags=flags):
                    run = probe(["--op", op] + flags)
                    self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0), run.stdout)
                    self.assertEqual(run.events, [])
                    self.assertEqual(the_capture(run)["status"], "ended")

    def test_off_mode_sees_nothing(self):
        run = probe(["--op", "legacy-launch", "--blocking"], mode="off")
        self.assertEqual(run.int("op_result"), IMPLICIT)
        self.assertEqual(run.events, [])


class Escapes(unittest.TestCase):
    def test_legacy_work_escaping_a_nonblocking_capture_is_said(self):
        for op, call in LEGACY.items():
            with self.subTest(op=op):
                bare = probe(["--op", op], preload=False)
                run = probe(["--op", op])
                self.assertEqual((run.int("op_result"), run.int("end_result")),
                                 (bare.int("op_result"), bare.int("end_result")))
                self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0))
                evs = run.events
                self.assertEqual(len(evs), 1, run.records)
                self.assertEqual((evs[0]["call"], evs[0]["event"], evs[0]["verdict"]),
                                 (call, "legacy-stream", "escaped"))
                self.assertTrue(any("escape_probe" in f for f in evs[0]["native_stack"]), evs[0])
                self.assertIn("escaped", run.stderr)
                cap = the_capture(run)
                self.assertEqual(cap["status"], "ended")   # the capture itself is fine
                summary = run.of_type("summary")[0]
                self.assertEqual(summary["verdicts"]["escaped"], 1)

    def test_a_stream_given_a_destroyed_streams_handle_is_asked_again(self):
        # A begin keeps its stream's non-blocking flag; a destroy forgets it,
        # since the driver hands the handle to the next stream created: a
        # non-blocking stream with a blocking one's old handle still escapes.
        for route in ("direct", "dlsym"):
            with self.subTest(route=route):
                run = probe(["--op", "legacy-launch", "--reused-stream"], route=route)
                self.assertEqual(run.int("reused"), 1, "the fake driver gave the handle to another stream")
                self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0))
                evs = [e for e in run.events if e["call"] == "cuLaunchKernel"]
                self.assertEqual(len(evs), 1, run.records)
                self.assertEqual((evs[0]["event"], evs[0]["verdict"]), ("legacy-stream", "escaped"), evs[0])
                self.assertEqual(the_capture(run)["status"], "ended")

    def test_capguard_report_groups_them_and_run_counts_them(self):
        import subprocess
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            for op, kind, call in (("legacy-launch", "legacy-stream", "cuLaunchKernel"),
                                   ("pageable-copy", "pageable-copy", "cuMemcpyHtoDAsync_v2")):
                log = os.path.join(tmp, op + ".jsonl")
                env = dict(os.environ, LD_LIBRARY_PATH=routes_common.FAKE_DIR, CG_CUBIN=CUBIN)
                env.pop("LD_PRELOAD", None)
                for k in [k for k in env if k.startswith("CAPGUARD_")]:
                    del env[k]
                p = subprocess.run([os.environ["CG_CLI"], "run", "--mode", "report", "--log", log, "--",
                                    PROBE_DIRECT, "--route", "direct", "--op", op, "--repeat", "3"],
                                   env=env, capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("1 call escaped a capture", p.stderr + p.stdout)
                p = subprocess.run([os.environ["CG_CLI"], "report", log], capture_output=True, text=True,
                                   timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                section = p.stdout.split("Escaped captures", 1)[1].split("\n\n", 1)[0]
                self.assertRegex(section, r"\n\s+1\s+%s\s+%s\s+\S" % (kind, call))

    def test_another_threads_legacy_work_is_its_own_business(self):
        run = probe(["--op", "legacy-launch", "--thread", "other"])
        self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0))
        self.assertEqual(run.events, [])

    def test_an_escape_in_a_loop_is_counted_not_rewritten(self):
        run = probe(["--op", "legacy-launch", "--repeat", "5"])
        self.assertEqual(len(run.events), 1, run.records)
        self.assertEqual(the_capture(run).get("repeats"), 4)


class PageableCopy(unittest.TestCase):
    def test_a_captured_copy_from_pageable_memory_is_said(self):
        for flags in ([], ["--blocking"]):
            for route in ("direct", "dlsym"):
                with self.subTest(flags=flags, route=route):
                    run = probe(["--op", "pageable-copy"] + flags, route=route)
                    self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0))
                    evs = run.events
                    self.assertEqual(len(evs), 1, run.records)
                    self.assertEqual((evs[0]["call"], evs[0]["event"], evs[0]["verdict"]),
                                     ("cuMemcpyHtoDAsync_v2", "pageable-copy", "escaped"))
                    self.assertIn("pageable host memory", run.stderr)
                    self.assertEqual(the_capture(run)["status"], "ended")

    def test_a_pageable_copy_on_a_stream_that_joined_the_capture_is_said(self):
        # The side stream never began a capture: its capture is found by the
        # driver's id, which the begin no longer asks for (learnt when needed).
        for flags in ([], ["--blocking"]):
            with self.subTest(flags=flags):
                run = probe(["--op", "fork-pageable-copy"] + flags)
                self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0))
                evs = run.events
                self.assertEqual(len(evs), 1, run.records)
                self.assertEqual((evs[0]["call"], evs[0]["event"], evs[0]["verdict"], evs[0]["capture"]["id"]),
                                 ("cuMemcpyHtoDAsync_v2", "pageable-copy", "escaped", 2))
                self.assertEqual(the_capture(run)["status"], "ended")

    def test_a_copy_from_pinned_memory_is_not(self):
        run = probe(["--op", "pinned-copy"])
        self.assertEqual((run.int("op_result"), run.int("end_result")), (0, 0))
        self.assertEqual(run.events, [])


class DriverLog(unittest.TestCase):
    """Drivers 12.9 and later log every refusal: a call capguard does not
    wrap is named as the first offender, at its call site."""

    def test_a_call_capguard_does_not_wrap_is_named_from_the_log(self):
        run = probe(["--op", "unwatched", "--blocking"], driver=13000)
        self.assertEqual((run.int("op_result"), run.int("end_result")), (UNSUPPORTED, INVALIDATED))
        cap = the_capture(run)
        self.assertEqual(cap["status"], "failed")
        self.assertIsNotNone(cap["broken_by"], cap)
        self.assertEqual(cap["broken_by"]["call"], "cuFakeUnwatchedRefusal")
        self.assertEqual(cap["broken_by"]["verdict"], "broke")
        self.assertEqual(cap["broken_by"]["event"], "driver-log")
        self.assertEqual(cap["broken_by"]["result"], UNSUPPORTED)
        self.assertIn("escape_probe", cap["broken_by"]["where"])
        self.assertIn("first offender cuFakeUnwatchedRefusal", run.stderr)

    def test_a_real_entry_point_capguard_does_not_wrap_is_named_from_the_log(self):
        # cuLaunchHostFunc on the legacy stream: not a row (it is no copy,
        # memset or launch), refused by the fake as legacy-stream work (906).
        self.assertEqual(routes_common.run_probe(["--op", "unwatched-host-func", "--blocking"], preload=False,
                                                 probe=PROBE_DIRECT, route="direct",
                                                 env_extra={"CG_CUBIN": CUBIN}).int("op_result"), IMPLICIT)
        for route in ("direct", "dlsym"):
            run = probe(["--op", "unwatched-host-func", "--blocking"], route=route, driver=13000)
            self.assertEqual((run.int("op_result"), run.int("end_result")), (IMPLICIT, INVALIDATED))
            self.assertEqual(run.events, [])   # no wrapper saw it
            b = the_capture(run)["broken_by"]
            self.assertIsNotNone(b)
            self.assertEqual((b["call"], b["event"], b["verdict"], b["result"]),
                             ("cuLaunchHostFunc", "driver-log", "broke", IMPLICIT))
            self.assertIn("escape_probe", b["where"])

    def test_before_12_9_it_is_said_plainly(self):
        run = probe(["--op", "unwatched", "--blocking"], driver=12020)
        cap = the_capture(run)
        self.assertEqual(cap["status"], "failed")
        self.assertIsNone(cap["broken_by"])
        self.assertIn("broken by a call capguard does not watch", run.stderr)

    def test_unwatched_breaks_are_rare_on_12_9(self):
        # Every breaking op of the third matrix, and the unwrapped one: on a
        # 12.9+ driver none leaves a capture "broken by a call capguard does
        # not watch".
        unnamed = broken = 0
        for op in list(LEGACY) + ["wait-before", "graph-launch", "unwatched", "unwatched-host-func"]:
            for thread in ("same", "other"):
                run = probe(["--op", op, "--blocking", "--thread", thread], driver=13000)
                cap = the_capture(run)
                if cap["status"] == "failed":
                    broken += 1
                    unnamed += cap["broken_by"] is None
        self.assertEqual(broken, 18)
        self.assertEqual(unnamed, 0)

    def test_the_programs_own_log_callback_keeps_receiving_everything(self):
        for op in ("legacy-launch", "unwatched", "wait-before"):
            with self.subTest(op=op):
                bare = probe(["--op", op, "--blocking", "--own-log"], preload=False)
                run = probe(["--op", op, "--blocking", "--own-log"])
                self.assertGreaterEqual(bare.int("own_log_lines"), 3)
                self.assertEqual(run.int("own_log_lines"), bare.int("own_log_lines"))

    def test_no_deadlock_with_the_callback_under_the_drivers_lock(self):
        # The fake calls the callback with its own lock held, on the
        # offending thread; six threads race captures and refusals.
        import subprocess
        env = dict(os.environ, LD_LIBRARY_PATH=routes_common.FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000",
                   LD_PRELOAD=routes_common.SHIM, CAPGUARD_MODE="report")
        env.pop("CAPGUARD_LOG", None)
        proc = subprocess.run([os.environ["CG_LOG_STRESS"], CUBIN], env=env, capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertGreater(int(proc.stdout.split("refusals=")[1]), 100)


if __name__ == "__main__":
    unittest.main(verbosity=2)
