"""Every route to the driver, every ground-truth column, under capguard in
report mode over the fake driver: capguard sees the call exactly when a
capture prohibits the calling thread, and reports what the driver did."""
import os
import re
import unittest

from routes_common import (COLUMNS, CUBIN, CUBIN_SIZE, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, PROHIBITED, column_args, run_probe)

ROUTES = ["direct", "dlsym", "procaddr"]


class EveryRouteEveryColumn(unittest.TestCase):
    def check_cell(self, route, col, op, driver):
        r = run_probe(column_args(col) + ["--op", op, "--image", CUBIN], route=route, driver=driver)
        self.assertEqual(r.rc, 0, r.stderr)
        prohibited = col in PROHIBITED
        refused = prohibited and (op == "unload" or driver < 12030)
        self.assertEqual(r.int("op_result"), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED if refused else 0)
        self.assertEqual(r.int("end_result"), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED if refused else 0)
        self.assertEqual(len(r.events), 1 if prohibited else 0, r.stderr)
        self.assertEqual(len(r.report_lines()), 1 if prohibited else 0, r.stderr)
        if prohibited:
            e = r.events[0]
            self.assertEqual(e["event"], "module-unload" if op == "unload" else "module-load")
            self.assertEqual(e["verdict"], "refused" if refused else "allowed")
            self.assertEqual(e["capture"]["mode"], col[1])
            self.assertEqual(e["result"], r.int("op_result"))
        caps = r.of_type("capture")
        self.assertEqual(len(caps), 1)
        self.assertEqual(caps[0]["status"], "failed" if refused else "ended")
        summary = r.of_type("summary")
        self.assertEqual(len(summary), 1)
        self.assertEqual(summary[0]["captures"], 1)

    def test_load_new_driver(self):
        for route in ROUTES:
            for col in COLUMNS:
                with self.subTest(route=route, column=col):
                    self.check_cell(route, col, "load", 13000)

    def test_load_old_driver(self):
        for route in ROUTES:
            for col in COLUMNS:
                with self.subTest(route=route, column=col):
                    self.check_cell(route, col, "load", 12020)

    def test_unload(self):
        for route in ROUTES:
            for col in COLUMNS:
                with self.subTest(route=route, column=col):
                    self.check_cell(route, col, "unload", 13000)


class Pointers(unittest.TestCase):
    def test_wrapped_and_untouched_pointers(self):
        for route in ROUTES:
            with self.subTest(route=route):
                r = run_probe(["--op", "none"], route=route)
                self.assertEqual(r.values["wrapped_owner"], "libcapguard.so")
                # An entry point capguard does not wrap is the driver's own pointer.
                self.assertEqual(r.values["unwrapped_owner"], "libcuda.so.1")

    def test_off_mode_is_pure_pass_through(self):
        for route in ROUTES:
            with self.subTest(route=route):
                r = run_probe(["--op", "load", "--image", CUBIN], route=route, driver=12020,
                              env_extra={"CAPGUARD_MODE": "off"})
                if route != "direct":  # the exported symbol is capguard's by linkage
                    self.assertEqual(r.values["wrapped_owner"], "libcuda.so.1")
                self.assertEqual(r.int("op_result"), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
                self.assertEqual(r.events, [])
                self.assertNotIn("capguard", r.stderr)

    def test_procaddr_versions_and_flags(self):
        # cudart asks at 10000 (v1, no mode: global) and 10010 (v2), with and
        # without the per-thread-default-stream flag; each must be wrapped.
        for version in (10000, 10010, 12000):
            for flags in (0, 2):
                with self.subTest(version=version, flags=flags):
                    r = run_probe(["--op", "load", "--image", CUBIN, "--proc-version", str(version),
                                   "--proc-flags", str(flags)], route="procaddr", driver=12020)
                    self.assertEqual(r.int("begin_result"), 0)
                    self.assertEqual(len(r.events), 1, r.stderr)
                    self.assertEqual(r.events[0]["capture"]["mode"], "global")
                    self.assertEqual(r.int("end_result"), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)

    def test_v1_begin_through_dlsym_is_global(self):
        r = run_probe(["--op", "load", "--image", CUBIN, "--v1", "--thread", "other"], route="dlsym", driver=12020)
        self.assertEqual(len(r.events), 1)
        self.assertEqual(r.events[0]["capture"]["mode"], "global")


class Report(unittest.TestCase):
    def test_report_says_what_a_person_needs(self):
        r = run_probe(["--op", "load", "--image", CUBIN], route="direct", driver=12020)
        lines = r.stderr.splitlines()
        first = r.report_lines()[0]
        self.assertRegex(first, r"^capguard: cuModuleLoadData during capture 1 \(stream 0x[0-9a-f]+, global mode, "
                                r"begun by thread \d+\): refused by the driver with error 900 operation not permitted when stream is capturing; the capture is now broken")
        text = "\n".join(lines)
        self.assertIn("cg_test_axpy", text)
        self.assertIn("cg_test_fill", text)
        self.assertRegex(text, r"cubin, %d bytes, sm_90, xxh3 [0-9a-f]{32}" % CUBIN_SIZE)
        self.assertIn("route_probe", text)  # the native stack names the caller
        # where the capture began: the probe's main, not capguard's or the driver's frames
        # (and its line: the probe is built with -g)
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "route_probe.c")) as f:
            begin_at = [i for i, t in enumerate(f, 1) if "CUresult begin = " in t][0]
        began = r"route_probe_direct\(main\+0x[0-9a-f]+\) at route_probe\.c:%d" % begin_at
        self.assertRegex(text, r"capture began: " + began + "\n")
        self.assertRegex(lines[-1], r"^capguard: 1 captures? \(1 broken\)")
        e = r.events[0]
        self.assertEqual(e["call"], "cuModuleLoadData")
        self.assertEqual(e["image"]["kind"], "cubin")
        self.assertEqual(e["image"]["size"], CUBIN_SIZE)
        self.assertEqual(e["image"]["sm"], 90)
        self.assertEqual(sorted(e["image"]["kernels"]), ["cg_test_axpy", "cg_test_fill"])
        self.assertEqual(e["driver_version"], 12020)
        self.assertTrue(any("route_probe" in f for f in e["native_stack"]))
        self.assertEqual(e["python_stack"], [])
        self.assertRegex(e["capture"]["began"], "^" + began + "$")
        self.assertEqual(r.of_type("capture")[0]["began"], e["capture"]["began"])
        proc = r.of_type("process")
        self.assertEqual(len(proc), 1)
        self.assertEqual(proc[0]["driver_version"], 12020)

    def test_each_load_entry_point_is_inspected(self):
        import os
        from routes_common import DATA
        cases = [("loadex", "kernels_sm90.cubin", "cuModuleLoadDataEx", "cubin"),
                 ("file", "kernels_sm90.cubin", "cuModuleLoad", "cubin"),
                 ("fatbin", "kernels_multi.fatbin", "cuModuleLoadFatBinary", "fatbin"),
                 ("load", "kernels_sm90.ptx", "cuModuleLoadData", "ptx"),
                 ("library", "kernels_sm90.cubin", "cuLibraryLoadData", "cubin")]
        for op, image, call, kind in cases:
            with self.subTest(op=op):
                r = run_probe(["--op", op, "--image", os.path.join(DATA, image)], route="dlsym", driver=13000)
                self.assertEqual(len(r.events), 1, r.stderr)
                e = r.events[0]
                self.assertEqual(e["call"], call)
                self.assertEqual(e["verdict"], "allowed")
                self.assertEqual(e["image"]["kind"], kind)
                self.assertIn("cg_test_fill", e["image"]["kernels"])

    def test_repeats_are_counted_not_reprinted(self):
        r = run_probe(["--op", "load", "--image", CUBIN, "--repeat", "5"], route="dlsym", driver=13000)
        self.assertEqual(len(r.events), 5)
        self.assertEqual(len(r.report_lines()), 1)
        self.assertRegex(r.stderr, r"4 repeated events were counted, not reprinted")
        self.assertEqual(r.of_type("summary")[0]["events"]["module-load"], 5)


class Robustness(unittest.TestCase):
    def test_bad_mode_warns_and_reports(self):
        r = run_probe(["--op", "load", "--image", CUBIN], driver=13000, env_extra={"CAPGUARD_MODE": "bogus"})
        self.assertIn("CAPGUARD_MODE=bogus is not a mode (guard, report, off); using guard, the default", r.stderr)
        self.assertEqual(len(r.events), 1)

    def test_summary_line_can_be_turned_off(self):
        r = run_probe(["--op", "load", "--image", CUBIN], driver=12020, env_extra={"CAPGUARD_SUMMARY": "0"})
        self.assertEqual(len(r.report_lines()), 1)
        self.assertNotRegex(r.stderr, r"capguard: \d+ captures?")
        self.assertEqual(len(r.of_type("summary")), 1)  # the log keeps it
        r = run_probe(["--op", "load", "--image", CUBIN], driver=12020, env_extra={"CAPGUARD_SUMMARY": "maybe"})
        self.assertIn("CAPGUARD_SUMMARY=maybe is not understood (use 1 or 0); treating it as 1", r.stderr)
        self.assertRegex(r.stderr, r"capguard: 1 capture \(1 broken\)")

    def test_unwritable_log_warns_once_and_goes_on(self):
        r = run_probe(["--op", "load", "--image", CUBIN], driver=12020, log=False,
                      env_extra={"CAPGUARD_LOG": "/nonexistent-dir/x.jsonl"})
        self.assertEqual(r.stderr.count("cannot open log /nonexistent-dir/x.jsonl"), 1)
        self.assertEqual(len(r.report_lines()), 1)
        self.assertEqual(r.int("op_result"), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)

    def test_without_libcuda_the_process_runs_as_without_capguard(self):
        import os
        import subprocess
        from routes_common import PROBE, SHIM
        env = dict(os.environ, LD_LIBRARY_PATH="/nonexistent")
        plain = subprocess.run([PROBE, "--op", "none"], env=env, capture_output=True, text=True)
        env["LD_PRELOAD"] = SHIM
        shimmed = subprocess.run([PROBE, "--op", "none"], env=env, capture_output=True, text=True)
        self.assertEqual(plain.returncode, 2)
        self.assertEqual((plain.returncode, plain.stdout, plain.stderr),
                         (shimmed.returncode, shimmed.stdout, shimmed.stderr))

    def test_without_libcuda_dlerror_is_glibcs_own(self):
        # A failed dlsym(RTLD_DEFAULT, "cu...") leaves glibc's own "undefined
        # symbol" text in dlerror(), not the error of capguard's own look for
        # libcuda.so.1: word for word when a shared object asks;
        # from the main program, glibc names libcapguard.so instead of the
        # program (its scope holds capguard's export). A name capguard does
        # not wrap is untouched.
        import os
        import subprocess
        from routes_common import SHIM
        probe = os.environ["CG_DLSYM_PROBE"]
        env = dict(os.environ, LD_LIBRARY_PATH="/nonexistent")
        env.pop("LD_PRELOAD", None)
        for name in ("cuModuleLoadData", "cuStreamBeginCapture_v2", "cuNoSuchEntryPoint"):
            with self.subTest(name=name):
                plain = subprocess.run([probe, name], env=env, capture_output=True, text=True)
                shimmed = subprocess.run([probe, name], env=dict(env, LD_PRELOAD=SHIM), capture_output=True,
                                         text=True)
                self.assertEqual(plain.returncode, 0, plain.stderr)
                self.assertEqual(shimmed.returncode, 0, shimmed.stderr)
                p = dict(l.split("=", 1) for l in plain.stdout.splitlines())
                s = dict(l.split("=", 1) for l in shimmed.stdout.splitlines())
                self.assertEqual((p["main_dlsym_found"], p["lib_dlsym_found"]), ("0", "0"))
                self.assertEqual((s["main_dlsym_found"], s["lib_dlsym_found"]), ("0", "0"))
                self.assertRegex(p["lib_dlerror"], r"libdlsym_caller\.so: undefined symbol: %s$" % name)
                self.assertEqual(s["lib_dlerror"], p["lib_dlerror"])
                self.assertRegex(s["main_dlerror"], r"\S+: undefined symbol: %s$" % name)
                self.assertNotIn("libcuda", shimmed.stdout)
                if name == "cuNoSuchEntryPoint":
                    self.assertEqual(shimmed.stdout, plain.stdout)
        # A wrapped name another object defines: found as glibc finds it, and
        # dlerror() stays empty after the successful lookup.
        plain = subprocess.run([probe, "cuLibraryUnload"], env=env, capture_output=True, text=True)
        shimmed = subprocess.run([probe, "cuLibraryUnload"], env=dict(env, LD_PRELOAD=SHIM), capture_output=True,
                                 text=True)
        self.assertIn("main_dlsym_found=1\nmain_dlerror=(none)\nlib_dlsym_found=1\nlib_dlerror=(none)\n"
                      "handle_dlsym_found=1\nhandle_dlerror=(none)\n", plain.stdout)
        self.assertEqual(shimmed.stdout, plain.stdout)

    def test_dlsym_rtld_next_is_relative_to_the_caller(self):
        # A second interposer that finds the real function with
        # dlsym(RTLD_NEXT, ...) must not get itself back (it would recurse).
        import os
        import subprocess
        from routes_common import SHIM
        helper = os.environ["CG_NEXT_INTERPOSER"]
        for order in ([SHIM, helper], [helper, SHIM]):
            with self.subTest(order=[os.path.basename(p) for p in order]):
                env = dict(os.environ, LD_PRELOAD=":".join(order))
                p = subprocess.run(["/bin/echo", "hello"], env=env, capture_output=True, text=True, timeout=20)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout, "hello\n")
                self.assertIn("next_interposer: puts resolved to libc", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=1)
