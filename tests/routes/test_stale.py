"""The stale-pointer check (CAPGUARD_STALE=1, docs/stale.md) over the fake
driver: a graph captured reading y (cg_test_fill), instantiated and launched,
then y freed (cuMemFree, cuMemFreeAsync on another stream), or freed and
allocated again at the same address before a launch: each named once, with
the free's or the launch's stack and where the capture began; the exec
destroyed before the free, or memory no graph reads freed: silent. What the
program sees never changes. Run on drivers 13000 (cuFuncGetParamInfo) and
12020 (the parameter table of the image the program loaded)."""
import json
import os
import subprocess
import tempfile
import unittest

import routes_common

PROBE = os.environ["CG_STALE_PROBE"]
CUBIN = os.path.join(os.environ["CG_DATA"], "kernels_sm90.cubin")
DRIVERS = (13000, 12020)


def probe(op, driver, stale=True, mode="report"):
    env = {"CAPGUARD_MODE": mode, "CG_CUBIN": CUBIN}
    if stale:
        env["CAPGUARD_STALE"] = "1"
    return routes_common.run_probe(["--op", op], route="direct", probe=PROBE, driver=driver, env_extra=env)


def stale_events(run):
    return [e for e in run.events if e["event"].startswith("stale-")]


CLI = os.environ["CG_CLI"]


def libstdcxx():
    """The C++ runtime a torch process has loaded (its demangler is what the shim borrows)."""
    import ctypes.util
    name = ctypes.util.find_library("stdc++") or "libstdc++.so.6"
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu"):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return name


class FindingCounts(unittest.TestCase):
    """A stale read is silent corruption: it counts as a broken capture does, in the
    headline, the exit statuses, the metrics, the JSON and the page; its kernel is
    named demangled wherever it is named."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        with open(CUBIN, "rb") as f:  # the fill kernel under a C++ name of the same length
            data = f.read()
        self.cubin = os.path.join(t, "mangled.cubin")
        with open(self.cubin, "wb") as f:
            f.write(data.replace(b"cg_test_fill", b"_Z5fill_Pfif"))
        self.env = dict(os.environ, LD_LIBRARY_PATH=routes_common.FAKE_DIR, FAKECUDA_DRIVER_VERSION="13000",
                        CAPGUARD_SHIM=routes_common.SHIM, CG_CUBIN=self.cubin, CG_KERNEL="_Z5fill_Pfif")
        for k in list(self.env):
            if k.startswith("CAPGUARD_") and k != "CAPGUARD_SHIM":
                del self.env[k]

    def tearDown(self):
        self.tmp.cleanup()

    def test_run_error_exitcode_report_exit_headline_metrics_json_page(self):
        t = self.tmp.name
        log, metrics = os.path.join(t, "log.jsonl"), os.path.join(t, "metrics")
        os.mkdir(metrics)
        env = dict(self.env, LD_PRELOAD=libstdcxx())  # capguard run puts the shim first
        run = subprocess.run([CLI, "run", "--stale", "--mode", "report", "--error-exitcode", "7", "--log", log,
                              "--prime", os.path.join(t, "p.cgp"), "--metrics", metrics, "--", PROBE, "--op",
                              "realloc-launch"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 7, run.stderr)
        self.assertIn("1 stale read", run.stderr)  # the run's headline
        self.assertIn("kernel fill_, argument 0", run.stderr)  # demangled where the host has a demangler
        self.assertNotIn("_Z5fill_Pfif", run.stderr)
        rep = subprocess.run([CLI, "report", log], capture_output=True, text=True)
        self.assertEqual(rep.returncode, 1, rep.stdout + rep.stderr)
        head = rep.stdout.splitlines()[0]
        self.assertIn("1 stale read", head)
        self.assertIn("kernel fill_, argument 0", rep.stdout)
        self.assertNotIn("_Z5fill_Pfif", rep.stdout)
        todo = rep.stdout[rep.stdout.index("\nWhat to do"):]
        self.assertIn("1 stale read:", todo)
        js = json.loads(subprocess.run([CLI, "report", "--json", log], capture_output=True, text=True).stdout)
        self.assertEqual(js["totals"]["stale_reads"], 1)
        html = os.path.join(t, "r.html")
        subprocess.run([CLI, "report", "--html", html, log], capture_output=True, text=True)
        with open(html) as f:
            page = f.read()
        self.assertIn('<span class="bad">1 stale read</span>', page)  # red, in the summary
        self.assertLess(page.index("Memory a live graph reads, freed"), page.index("<h2>Timeline</h2>"))
        self.assertIn("1 stale read:", page[page.index('id="what-to-do"'):page.index("<h2>Timeline</h2>")])
        timeline = page[page.index("<h2>Timeline</h2>"):]
        self.assertEqual(timeline.count("(stale read) at"), 2)  # the free's mark and the launch's
        self.assertIn("fill_", page)
        prom = "".join(open(os.path.join(metrics, f)).read() for f in os.listdir(metrics))
        self.assertRegex(prom, r"capguard_stale_reads_total\{[^}]*\} 1\n")

    def test_advice_is_the_findings_tables_alone(self):
        # The shim says facts; what to do is worded once, in tools/meaning/findings.c.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        hits = []
        for top in ("shim", "detect", "tools"):
            for d, _, files in os.walk(os.path.join(root, top)):
                for name in files:
                    if name.endswith((".c", ".h")):
                        with open(os.path.join(d, name), errors="replace") as f:
                            if "keep the buffer alive" in f.read():
                                hits.append(os.path.relpath(os.path.join(d, name), root))
        self.assertEqual(hits, ["tools/meaning/findings.c"])


class Report(unittest.TestCase):
    """capguard report groups the stale events by graph exec and allocation, with what to
    do, in its text, JSON, HTML and trace renderings."""

    def test_report_groups_by_exec_and_allocation(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = os.path.join(tmp, "log.jsonl")
            env = dict(os.environ, LD_LIBRARY_PATH=routes_common.FAKE_DIR, LD_PRELOAD=routes_common.SHIM,
                       FAKECUDA_DRIVER_VERSION="13000", CAPGUARD_MODE="report", CAPGUARD_STALE="1",
                       CAPGUARD_LOG=log, CAPGUARD_PRIME=os.path.join(tmp, "p.cgp"), CG_CUBIN=CUBIN)
            for op in ("realloc-launch", "destroy-first"):
                subprocess.run([PROBE, "--op", op], env=env, check=True, capture_output=True)
            html, trace = os.path.join(tmp, "r.html"), os.path.join(tmp, "t.json")
            text = subprocess.run([CLI, "report", "--all", "--html", html, "--trace", trace, log],
                                  capture_output=True, text=True)
            self.assertEqual(text.returncode, 1, text.stderr)  # a stale read is a finding
            self.assertIn("Memory a live graph reads, freed (1 graph exec and allocation)", text.stdout)
            self.assertIn("kernel cg_test_fill, argument 0", text.stdout)
            self.assertIn("freed by cuMemFree_v2 at", text.stdout)
            self.assertIn("replayed by cuGraphLaunch at", text.stdout)
            self.assertIn("freed and allocated again as another buffer", text.stdout)
            self.assertIn("keep the buffer alive as long as the graph exec", text.stdout)
            self.assertNotIn("nothing to do", text.stdout)
            js = json.loads(subprocess.run([CLI, "report", "--all", "--json", log], capture_output=True,
                                           text=True).stdout)
            self.assertEqual(len(js["stale"]), 1, js["stale"])
            g = js["stale"][0]
            self.assertEqual((g["kernel"], g["arg"], g["size"]), ("cg_test_fill", 0, 1024))
            self.assertEqual(g["freed_by"]["call"], "cuMemFree_v2")
            self.assertEqual(g["replayed_by"]["call"], "cuGraphLaunch")
            self.assertIn("stale_probe.c", g["freed_by"]["site"])
            self.assertIn("re-capture", g["what_to_do"])
            self.assertIn("stale", [f["finding"] for f in js["findings"]])
            with open(html) as f:
                page = f.read()
            self.assertIn("Memory a live graph reads, freed", page)
            self.assertIn("cg_test_fill", page)
            with open(trace) as f:
                tr = json.load(f)
            kinds = sorted(e["args"]["event"] for e in tr["traceEvents"] if e.get("cat") == "stale")
            self.assertEqual(kinds, ["stale-free", "stale-launch"])


class Stale(unittest.TestCase):
    def assert_named(self, run, kind, call):
        self.assertEqual(run.rc, 0, run.stderr)
        evs = [e for e in stale_events(run) if e["event"] == kind]
        self.assertEqual(len(evs), 1, run.records)
        e = evs[0]
        self.assertEqual(e["call"], call)
        self.assertEqual(e["verdict"], "stale")
        self.assertEqual(e["stale"]["kernel"], "cg_test_fill")
        self.assertEqual(e["stale"]["arg"], 0)
        self.assertEqual(e["stale"]["size"], 1024)
        self.assertFalse(e["stale"]["by_hand"])
        self.assertEqual(e["capture"]["id"], 1)
        self.assertIn("stale_probe", e["capture"]["began"])  # where the capture began
        self.assertTrue(any("stale_probe" in f for f in e["native_stack"]), e["native_stack"])  # the call's own
        return e

    def test_free_of_memory_a_live_exec_reads_is_named(self):
        for driver in DRIVERS:
            for mode in ("report", "guard"):
                with self.subTest(driver=driver, mode=mode):
                    run = probe("free", driver, mode=mode)
                    self.assertEqual(run.values["free"], "0")
                    self.assert_named(run, "stale-free", "cuMemFree_v2")
                    self.assertEqual(len(stale_events(run)), 1)
                    self.assertIn("freed while graph exec", run.stderr)
                    self.assertIn("reads it: kernel cg_test_fill, argument 0", run.stderr)
                    # the shim says facts; what to do is capguard report's (tools/meaning/findings.c)
                    self.assertNotIn("keep the buffer alive", run.stderr)

    def test_free_and_allocation_at_the_same_address_then_launch_is_named_once(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("realloc-launch", driver)
                self.assertEqual(run.values["same_address"], "1")
                self.assertEqual((run.values["relaunch"], run.values["relaunch2"]), ("0", "0"))
                self.assert_named(run, "stale-free", "cuMemFree_v2")
                e = self.assert_named(run, "stale-launch", "cuGraphLaunch")
                self.assertNotEqual(e["stale"]["now_buffer_id"], 0)
                self.assertNotEqual(e["stale"]["now_buffer_id"], e["stale"]["buffer_id"])
                self.assertIn("allocated again as another buffer", run.stderr)

    def test_free_async_on_another_stream_is_named(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("free-async", driver)
                self.assertEqual(run.values["free_async"], "0")
                self.assert_named(run, "stale-free", "cuMemFreeAsync")

    def test_exec_destroyed_before_the_free_is_silent(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("destroy-first", driver)
                self.assertEqual((run.rc, run.values["destroy"], run.values["free"]), (0, "0", "0"))
                self.assertEqual(stale_events(run), [])
                self.assertNotIn("stale", run.stderr)

    def test_healthy_replays_and_unrelated_frees_are_silent(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("healthy", driver)
                self.assertEqual(run.rc, 0, run.stderr)
                self.assertEqual(stale_events(run), [])
                self.assertNotIn("stale", run.stderr)

    def test_memcpy_and_memset_nodes_are_walked(self):
        # The memset node's destination, freed: named as that node; y, read by the kernel and
        # by the memcpy node, freed: named once for the exec, with both reads counted.
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("copies", driver)
                self.assertEqual((run.rc, run.values["free_w"], run.values["free"]), (0, "0", "0"), run.stderr)
                evs = stale_events(run)
                self.assertEqual(len(evs), 2, run.records)
                memset, y = evs
                self.assertEqual((memset["stale"]["kernel"], memset["stale"]["arg"]), ("(a memset node)", 0))
                self.assertEqual(memset["stale"]["size"], 7 * 1024)
                self.assertEqual((y["stale"]["kernel"], y["stale"]["arg"], y["stale"]["reads"]), ("cg_test_fill", 0, 2))

    def test_each_exec_of_a_graph_is_named(self):
        run = probe("two-execs", 13000)
        evs = stale_events(run)
        self.assertEqual(len(evs), 2, run.records)
        self.assertEqual(len({e["stale"]["exec"] for e in evs}), 2)

    def test_a_graph_built_by_hand_is_walked_at_instantiate(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("by-hand", driver)
                e = [e for e in stale_events(run)]
                self.assertEqual(len(e), 1, run.records)
                self.assertTrue(e[0]["stale"]["by_hand"])
                self.assertEqual(e[0]["stale"]["kernel"], "cg_test_fill")
                self.assertIn("built by hand", run.stderr)

    def test_extra_buffer_arguments_are_split(self):
        # Library kernels (cuBLAS) give their arguments as one buffer: split by the layout.
        run = probe("extra", 13000)
        self.assertEqual(run.values["free"], "0")
        e = self.assert_named(run, "stale-free", "cuMemFree_v2")
        self.assertEqual(len(stale_events(run)), 1)
        self.assertNotIn("could not be read", run.stderr)

    def test_expandable_segments_growing_and_shrinking_elsewhere_is_silent(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("vmm-healthy", driver)
                self.assertEqual(run.rc, 0, run.stderr)
                self.assertEqual((run.values["unmap_other"], run.values["release_other"], run.values["map_new"]),
                                 ("0", "0", "0"))
                self.assertEqual(stale_events(run), [])
                self.assertNotIn("stale", run.stderr)

    def assert_piece_named(self, run, now_nonzero, kernel="cg_test_fill"):
        self.assertEqual(run.rc, 0, run.stderr)
        evs = stale_events(run)
        self.assertEqual([e["event"] for e in evs], ["stale-launch"], run.records)  # none at the unmap
        e = evs[0]
        self.assertEqual(e["call"], "cuGraphLaunch")
        st = e["stale"]
        self.assertTrue(st["piece"])
        self.assertEqual(st["size"], 2 << 20)  # the piece, not the 32 MiB reserved range
        self.assertEqual(st["kernel"], kernel)
        self.assertNotEqual(st["buffer_id"], 0)
        self.assertEqual(st["now_buffer_id"] != 0, now_nonzero)
        self.assertNotEqual(st["now_buffer_id"], st["buffer_id"])
        self.assertIn("stale_probe", e["capture"]["began"])  # where it was captured
        self.assertTrue(any("stale_probe" in f for f in e["native_stack"]))  # and the launch
        return e

    def test_a_word_in_the_reserved_range_where_nothing_is_mapped_is_no_read(self):
        # The plural attribute call answers such an address with the whole
        # range and buffer id 0 (measured on an H200): no allocation, so no
        # read; it was named a second time, as the 168 GB range, on the GPU.
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("vmm-word", driver)
                self.assertEqual(run.values["remap"], "0")
                self.assert_piece_named(run, True, kernel="cg_test_axpy")
                self.assertEqual(stale_events(run)[0]["stale"]["arg"], 1)

    def test_a_piece_unmapped_under_a_live_exec_is_named_at_its_launch(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("vmm-unmap", driver)
                self.assertEqual((run.values["unmap"], run.values["relaunch"]), ("0", "0"))
                self.assert_piece_named(run, False)
                self.assertIn("reads a mapped piece unmapped since its capture", run.stderr)

    def test_another_physical_allocation_mapped_at_the_same_address_is_named(self):
        for driver in DRIVERS:
            with self.subTest(driver=driver):
                run = probe("vmm-remap", driver)
                self.assertEqual(run.values["remap"], "0")
                self.assert_piece_named(run, True)
                self.assertIn("to another physical allocation", run.stderr)
                with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as log:
                    log.write("".join(json.dumps(r) + "\n" for r in run.records))
                    log.flush()
                    rep = subprocess.run([CLI, "report", log.name], capture_output=True, text=True)
                self.assertEqual(rep.returncode, 1, rep.stdout)
                self.assertIn("mapped piece 0x", rep.stdout)
                self.assertIn("after the memory was mapped to another physical allocation", rep.stdout)

    def test_nodes_that_cannot_be_read_are_said_once_with_their_kernels(self):
        # Driver 12.2 has no cuFuncGetParamInfo, and a module loaded from a file leaves
        # capguard no layout: its node cannot be read. Said once a run (two execs here),
        # with how many nodes, which kernel and the driver's version.
        env = {"CAPGUARD_MODE": "report", "CG_CUBIN": CUBIN, "CAPGUARD_STALE": "1", "CG_LOAD_FROM_FILE": "1"}
        run = routes_common.run_probe(["--op", "two-execs"], route="direct", probe=PROBE, driver=12020, env_extra=env)
        self.assertEqual(run.rc, 0, run.stderr)
        lines = [l for l in run.stderr.splitlines() if "could not be read" in l]
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertIn("1 kernel node of a graph could not be read", lines[0])
        self.assertIn("driver 12020", lines[0])
        self.assertIn("cg_test_fill", lines[0])
        self.assertEqual(stale_events(run), [])

    def test_threads_racing_lose_nothing(self):
        # Four threads capture, launch and free under their live execs, then launch again,
        # while a fifth maps and unmaps pieces: every free and every launch after it named
        # once, nothing else, nothing crashed or hung.
        run = probe("race", 13000)
        self.assertEqual(run.rc, 0, run.stderr[-2000:])
        self.assertEqual(run.values["failed"], "0")
        evs = stale_events(run)
        frees = [e for e in evs if e["event"] == "stale-free"]
        self.assertEqual(len(frees), int(run.values["frees"]), run.stderr[-2000:])
        per_thread = {}
        for e in frees:  # (the fake hands a destroyed exec's handle and a freed address out again)
            per_thread[e["tid"]] = per_thread.get(e["tid"], 0) + 1
        self.assertEqual(sorted(per_thread.values()), [int(run.values["frees"]) // 4] * 4)
        launches = [e for e in evs if e["event"] == "stale-launch"]  # each launch after its free, named too
        self.assertEqual(len(launches), len(frees))
        self.assertEqual(len(evs), len(frees) + len(launches))

    def test_off_unless_asked(self):
        # Without CAPGUARD_STALE the same free is the program's business.
        run = probe("free", 13000, stale=False)
        self.assertEqual((run.rc, run.values["free"]), (0, "0"))
        self.assertEqual(stale_events(run), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
