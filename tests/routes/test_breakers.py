"""The calls that break captures on every driver (driver-semantics.md, both
matrices): allocations, frees, graph-exec destroys, cuCtxSetLimit,
synchronisation, event queries and waits. Over the fake driver, through every
route: each is seen and named only where the driver would refuse it; report
mode changes nothing; guard mode defers frees and graph-exec destroys,
answers a query of a captured event as not ready, rescues allocations with
CAPGUARD_RESCUE=1; the capture record names the first offender; repeats are
counted, not written again."""
import os
import tempfile
import unittest

from routes_common import COLUMNS, FAKE_DIR, PROHIBITED, Run, column_args  # noqa: F401
import routes_common

BREAKER_PROBE = os.environ["CG_BREAKER_PROBE"]
BREAKER_PROBE_DIRECT = os.environ["CG_BREAKER_PROBE_DIRECT"]

NOT_READY = 600
UNSUPPORTED = 900
INVALIDATED = 901
CAPTURED_EVENT = 907

# op: (the entry point capguard names, event kind, rule). Rules: "prohibited"
# where a capture prohibits the thread (the PROHIBITED columns), "always" in
# every column with 900, "captured-event" in every column with 907.
OPS = {
    "alloc": ("cuMemAlloc_v2", "allocation", "prohibited"),
    "pitch": ("cuMemAllocPitch_v2", "allocation", "prohibited"),
    "allochost": ("cuMemAllocHost_v2", "allocation", "prohibited"),
    "hostalloc": ("cuMemHostAlloc", "allocation", "prohibited"),
    "hostregister": ("cuMemHostRegister_v2", "allocation", "prohibited"),
    "managed": ("cuMemAllocManaged", "allocation", "prohibited"),
    "free": ("cuMemFree_v2", "free", "prohibited"),
    "freehost": ("cuMemFreeHost", "free", "prohibited"),
    "hostunregister": ("cuMemHostUnregister", "free", "prohibited"),
    "execdestroy": ("cuGraphExecDestroy", "graph-exec-destroy", "prohibited"),
    "setlimit": ("cuCtxSetLimit", "set-limit", "prohibited"),
    "idlesync": ("cuStreamSynchronize", "synchronize", "prohibited"),
    "prequery": ("cuEventQuery", "event-wait", "prohibited"),
    "ctxsync": ("cuCtxSynchronize", "synchronize", "always"),
    "streamsync": ("cuStreamSynchronize", "synchronize", "always"),
    "streamquery": ("cuStreamQuery", "synchronize", "always"),
    "eventquery": ("cuEventQuery", "event-wait", "captured-event"),
    "eventsync": ("cuEventSynchronize", "event-wait", "captured-event"),
}


def expected(op, col):
    """What the driver answers the op in that column: 0, 900 or 907."""
    rule = OPS[op][2]
    if rule == "always":
        return UNSUPPORTED
    if rule == "captured-event":
        return CAPTURED_EVENT
    return UNSUPPORTED if col in PROHIBITED else 0


def probe(args, route="dlsym", mode="report", preload=True, env=None):
    extra = {"CAPGUARD_MODE": mode}
    extra.update(env or {})
    exe = BREAKER_PROBE_DIRECT if route == "direct" else BREAKER_PROBE
    return routes_common.run_probe(args, route=route, env_extra=extra, preload=preload, probe=exe)


def captures(run):
    """The probe's capture (its first one only makes a graph to destroy)."""
    return [c for c in run.of_type("capture") if c["id"] != 1]


class Matrix(unittest.TestCase):
    """Every op in every column: without capguard the fake answers as the
    matrix says; in report mode the program sees the same answers, and
    capguard reports exactly the calls the driver refused."""

    def test_every_cell_report_mode(self):
        for op, (call, kind, _) in OPS.items():
            for col in COLUMNS:
                with self.subTest(op=op, column=col):
                    args = ["--op", op] + column_args(col)
                    plain = probe(args, preload=False)
                    rep = probe(args)
                    want = expected(op, col)
                    self.assertEqual(plain.int("op_result"), want, plain.stdout + plain.stderr)
                    for key in ("op_result", "end_result", "graph"):
                        self.assertEqual(rep.values[key], plain.values[key], key)
                    broken = want != 0
                    self.assertEqual(plain.int("end_result"), INVALIDATED if broken else 0)
                    events = rep.events
                    if not broken:
                        self.assertEqual(events, [], rep.stderr)
                        continue
                    self.assertEqual(len(events), 1, rep.stderr)
                    e = events[0]
                    self.assertEqual((e["call"], e["event"], e["verdict"]), (call, kind, "refused"))
                    self.assertEqual(e["driver_result"], want)
                    self.assertIn("capturing", e["meaning"])
                    [cap] = captures(rep)
                    self.assertEqual(cap["status"], "failed")
                    self.assertEqual(cap["end_result"], INVALIDATED)
                    self.assertEqual(cap["broken_by"]["call"], call)
                    self.assertEqual(cap["broken_by"]["result"], want)
                    self.assertIn("breaker_probe", cap["broken_by"]["where"])
                    self.assertIn(f"first offender {call}", rep.stderr)

    def test_every_route(self):
        # The exported symbol, dlsym and cuGetProcAddress each reach the wrapper.
        for route in ("direct", "dlsym", "procaddr"):
            for op, (call, kind, _) in OPS.items():
                with self.subTest(route=route, op=op):
                    rep = probe(["--op", op, "--mode", "global"], route=route)
                    self.assertEqual(rep.rc, 0, rep.stderr)
                    self.assertEqual([(e["call"], e["event"]) for e in rep.events], [(call, kind)], rep.stderr)

    def test_per_thread_stream_variants(self):
        # cudart built for the per-thread default stream asks cuGetProcAddress
        # with that flag and calls the _ptsz variants: wrapped as well.
        for op, call in (("streamsync", "cuStreamSynchronize_ptsz"), ("streamquery", "cuStreamQuery_ptsz"),
                         ("eventquery", "cuEventQuery")):
            with self.subTest(op=op):
                rep = probe(["--op", op, "--ptsz"], route="procaddr")
                self.assertEqual([e["call"] for e in rep.events], [call], rep.stderr)
                g = probe(["--op", op, "--ptsz", "--thread", "other"], route="procaddr", mode="guard")
                if op == "eventquery":  # recorded with cuEventRecord_ptsz: known to be in the capture
                    self.assertEqual(g.events[0]["verdict"], "not-ready")

    def test_report_mode_changes_no_driver_call(self):
        # The driver sees the same calls, in the same order, with the same
        # answers, with capguard in report mode as without it (capguard's own
        # queries aside).
        own = {"cuDriverGetVersion", "cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGetAttribute",
               "cuStreamGetCaptureInfo", "cuStreamGetFlags",
               "cuLogsRegisterCallback"}
        for op in ("alloc", "free", "execdestroy", "eventquery", "ctxsync", "prequery", "streamsync"):
            for col in (COLUMNS[0], COLUMNS[4]):
                with self.subTest(op=op, column=col):
                    traces = []
                    for preload in (False, True):
                        with tempfile.NamedTemporaryFile("r", suffix=".trace") as t:
                            probe(["--op", op] + column_args(col), preload=preload,
                                  env={"FAKECUDA_TRACE": t.name})
                            calls = [ln.split()[0] + " " + ln.split()[-1] for ln in t.read().splitlines()]
                        traces.append([c for c in calls if c.split()[0] not in own])
                    self.assertEqual(traces[1], traces[0])


class Guard(unittest.TestCase):
    def test_frees_and_destroys_are_deferred(self):
        for op, verdict in (("free", "deferred-free"), ("freehost", "deferred-free"),
                            ("execdestroy", "deferred-destroy")):
            for col in COLUMNS:
                if col not in PROHIBITED:
                    continue
                with self.subTest(op=op, column=col):
                    g = probe(["--op", op] + column_args(col), mode="guard")
                    self.assertEqual((g.int("op_result"), g.int("end_result"), g.int("graph")), (0, 0, 1),
                                     g.stderr)
                    self.assertEqual(g.int("replay_result"), 0)
                    # it ran when the capture ended: a second free or destroy is refused
                    self.assertNotEqual(g.int("again_result"), 0)
                    self.assertEqual([e["verdict"] for e in g.events], [verdict])
                    [cap] = captures(g)
                    self.assertEqual(cap["status"], "ended")
                    self.assertNotIn("broken_by", cap)
                    self.assertNotIn("deferred call on", g.stderr)  # none failed
                    self.assertNotIn("deferred calls (", g.stderr)  # none left over

    def test_each_fix_is_said_once_in_its_own_words(self):
        g = probe(["--op", "free", "--then", "execdestroy", "--watchdog", "10"], mode="guard")
        lines = [ln for ln in g.stderr.splitlines() if " during capture: " in ln and "further calls" in ln]
        self.assertEqual(len(lines), 3, g.stderr)
        self.assertRegex(lines[0] + lines[1] + lines[2], "cuEventQuery during capture: answered not ready by capguard")
        self.assertIn("cuMemFree_v2 during capture: returned success; the memory is freed when the capture ends",
                      g.stderr)
        self.assertIn("cuGraphExecDestroy during capture: returned success; the graph is destroyed when the "
                      "capture ends", g.stderr)

    def test_captured_event_query_is_not_ready(self):
        # ... to any thread but the one that began the capture (docs/reliability.md, attack 3).
        for col in COLUMNS:
            if col[0] != "other":
                continue
            with self.subTest(column=col):
                g = probe(["--op", "eventquery"] + column_args(col), mode="guard")
                self.assertEqual((g.int("op_result"), g.int("end_result")), (NOT_READY, 0), g.stderr)
                [e] = g.events
                self.assertEqual((e["verdict"], e["driver_result"], e["result"]), ("not-ready", -1, NOT_READY))

    def test_the_capturing_thread_gets_the_drivers_answer(self):
        # Attack 3 of docs/reliability.md: the thread that must end the capture is never
        # answered not ready for an event of it (a poll there would spin
        # forever): it gets the driver's 907 at once, in every mode.
        for col in COLUMNS:
            if col[0] != "same":
                continue
            with self.subTest(column=col):
                g = probe(["--op", "eventquery", "--repeat", "3"] + column_args(col), mode="guard")
                self.assertEqual((g.int("op_result"), g.int("end_result")), (CAPTURED_EVENT, INVALIDATED), g.stderr)
                self.assertEqual(g.events[0]["verdict"], "refused")
                self.assertEqual(g.events[0]["driver_result"], CAPTURED_EVENT)
                self.assertEqual(captures(g)[0]["broken_by"]["call"], "cuEventQuery")

    def test_captured_event_wait_is_reported_not_faked(self):
        g = probe(["--op", "eventsync"], mode="guard")
        self.assertEqual((g.int("op_result"), g.int("end_result")), (CAPTURED_EVENT, INVALIDATED))
        self.assertEqual(g.events[0]["verdict"], "refused")
        self.assertEqual(captures(g)[0]["broken_by"]["call"], "cuEventSynchronize")

    def test_watchdog_polling_a_captured_event(self):
        # NCCL's watchdog: another thread polls an event recorded in the capture.
        rep = probe(["--op", "none", "--watchdog", "30"])
        self.assertEqual(rep.int("poll_other_result"), CAPTURED_EVENT)
        self.assertEqual(rep.int("end_result"), INVALIDATED)
        [cap] = captures(rep)
        self.assertEqual(cap["broken_by"]["call"], "cuEventQuery")
        self.assertEqual(cap["broken_by"]["result"], CAPTURED_EVENT)
        g = probe(["--op", "none", "--watchdog", "30"], mode="guard")
        polls = g.int("polls")
        self.assertGreater(polls, 5)
        self.assertEqual((g.int("polls_not_ready"), g.int("polls_other")), (polls, 0))
        self.assertEqual((g.int("end_result"), g.int("replay_result")), (0, 0))
        # one event written, the other polls counted
        self.assertEqual([e["verdict"] for e in g.events], ["not-ready"])
        [cap] = captures(g)
        self.assertEqual(cap["repeats"], polls - 1)
        [s] = g.of_type("summary")
        self.assertEqual(s["events"]["event-wait"], polls)
        self.assertEqual(s["verdicts"]["not-ready"], polls)

    def test_allocations_rescued_only_when_asked(self):
        for op in ("alloc", "pitch", "allochost", "hostalloc", "hostregister", "managed"):
            with self.subTest(op=op):
                g = probe(["--op", op], mode="guard")
                self.assertEqual((g.int("op_result"), g.int("end_result")), (UNSUPPORTED, INVALIDATED))
                self.assertEqual(g.events[0]["verdict"], "refused")
                r = probe(["--op", op], mode="guard", env={"CAPGUARD_RESCUE": "1"})
                self.assertEqual((r.int("op_result"), r.int("end_result"), r.int("replay_result")), (0, 0, 0),
                                 r.stderr)
                self.assertEqual([e["verdict"] for e in r.events], ["rescued"])
                self.assertEqual(r.events[0]["driver_result"], 0)

    def test_what_cannot_be_fixed_is_reported(self):
        for op in ("ctxsync", "streamsync", "streamquery", "setlimit", "idlesync"):
            with self.subTest(op=op):
                g = probe(["--op", op], mode="guard", env={"CAPGUARD_RESCUE": "1"})
                self.assertEqual((g.int("op_result"), g.int("end_result")), (UNSUPPORTED, INVALIDATED))
                self.assertEqual(captures(g)[0]["broken_by"]["call"], OPS[op][0])

    def test_a_prohibited_event_query_is_asked_in_relaxed_mode(self):
        # Attack 1 of docs/reliability.md: a query of an event recorded before the capture,
        # from a thread the capture prohibits (a global-mode watchdog before
        # the event is recorded into the capture), is asked in relaxed mode:
        # the driver answers it (driver-semantics.md, "+swap" columns).
        for col in COLUMNS:
            if col not in PROHIBITED:
                continue
            with self.subTest(column=col):
                g = probe(["--op", "prequery"] + column_args(col), mode="guard")
                self.assertEqual((g.int("op_result"), g.int("end_result"), g.int("replay_result")), (0, 0, 0),
                                 g.stderr)
                self.assertEqual([(e["verdict"], e["driver_result"]) for e in g.events], [("rescued", 0)])

    def test_off_mode_sees_nothing(self):
        off = probe(["--op", "alloc", "--then", "eventquery"], mode="off")
        self.assertEqual(off.events, [])
        self.assertEqual(off.int("op_result"), UNSUPPORTED)


class FirstOffender(unittest.TestCase):
    def test_the_first_call_is_named_not_a_later_one(self):
        rep = probe(["--op", "alloc", "--then", "ctxsync"])
        [cap] = captures(rep)
        self.assertEqual(cap["broken_by"]["call"], "cuMemAlloc_v2")
        self.assertEqual(cap["broken_by"]["verdict"], "refused")
        self.assertEqual(cap["broken_by"]["event"], "allocation")
        self.assertRegex(rep.stderr, r"capture 2 \(stream 0x[0-9a-f]+, global, began at [^)]*breaker_probe.*\) broke "
                                     r"\(its end returned 901 [^)]*\): first offender cuMemAlloc_v2 at ")

    def test_a_break_capguard_did_not_see_is_said_plainly(self):
        rep = probe(["--op", "unwatched"])
        self.assertEqual(rep.int("end_result"), INVALIDATED)
        self.assertEqual(rep.events, [])
        [cap] = captures(rep)
        self.assertEqual(cap["status"], "failed")
        self.assertIn("broken_by", cap)
        self.assertIsNone(cap["broken_by"])
        self.assertRegex(rep.stderr, r"capture 2 \(stream 0x[0-9a-f]+, global, began at [^)]*breaker_probe.*\) broke "
                                     r"\(its end returned 901 [^)]*\): broken by a call capguard does not watch\n")
        # a call capguard saw after the break is not its first offender
        later = probe(["--op", "unwatched", "--then", "alloc"])
        self.assertEqual(later.int("then_result"), UNSUPPORTED)
        self.assertIsNone(captures(later)[0]["broken_by"])

    def test_repeats_are_counted_not_written(self):
        rep = probe(["--op", "prequery", "--repeat", "50", "--mode", "global"])
        self.assertEqual(len(rep.events), 1)
        [cap] = captures(rep)
        self.assertEqual(cap["repeats"], 49)
        [s] = rep.of_type("summary")
        self.assertEqual(s["events"]["event-wait"], 50)
        self.assertEqual(s["verdicts"]["refused"], 50)


if __name__ == "__main__":
    unittest.main()
