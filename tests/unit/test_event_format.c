/* Unit tests of detect/log/event_format.c: the JSON is parsed back with jansson
 * and checked field by field against docs/log-format.md; escaping, the
 * snprintf-like truncation contract and the text layout are checked too. */
#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capguard/event.h"
#include "capguard/log_keys.h"
#include "capguard/frame_filter.h"
#include "check_run.h"

#define BIG 65536

/* ---- fixtures ------------------------------------------------------------ */

static cg_image_info fx_image;
static const char *fx_native[20];
static char fx_native_buf[20][32];
static const cg_py_frame fx_py[2] = {
    {"/opt/triton/compiler.py", 1234, "load_binary"},
    {"model.py", 12, "f"},
};

static void add_kernel(cg_image_info *im, size_t *pos, const char *name) {
  size_t n = strlen(name) + 1;
  memcpy(im->kernel_names + *pos, name, n);
  *pos += n;
  im->n_kernels++;
}

static cg_event load_event(void) {
  memset(&fx_image, 0, sizeof fx_image);
  fx_image.kind = CG_IMAGE_CUBIN;
  fx_image.size = 5328;
  fx_image.sm_arch = 90;
  fx_image.archs[0] = 90;
  fx_image.n_archs = 1;
  fx_image.hash.hi = 0x0123456789abcdefULL;
  fx_image.hash.lo = 0xfedcba9876543210ULL;
  size_t pos = 0;
  add_kernel(&fx_image, &pos, "_causal_conv1d_update_kernel");
  add_kernel(&fx_image, &pos, "second_kernel");
  for (int i = 0; i < 20; i++) {
    snprintf(fx_native_buf[i], sizeof fx_native_buf[i], "libfoo.so(frame_%d+0x%x)", i, i * 16);
    fx_native[i] = fx_native_buf[i];
  }
  cg_event e = {
      .kind = CG_EV_MODULE_LOAD,
      .verdict = CG_VERDICT_REFUSED,
      .call = "cuModuleLoadData",
      .result = 900,
      .driver_result = 900,
      .driver_version = 12020,
      .emulated_version = 0,
      .pid = 4242,
      .tid = 12345,
      .time_ns = 1700000000123456789ULL,
      .thread_mode = CG_MODE_GLOBAL,
      .capture = {.id = 7, .stream = 0x7f00deadbe00ULL, .context = 1, .tid = 12345,
                  .mode = CG_MODE_GLOBAL, .status = CG_CAPTURE_INVALIDATED},
      .capture_began = "model_runner.py:1234 in capture",
      .n_prohibitors = 1,
      .image = &fx_image,
      .module = 0x5555deadbeefULL,
      .native = fx_native,
      .n_native = 3,
      .py = fx_py,
      .n_py = 2,
  };
  return e;
}

static cg_event unload_event(void) {
  cg_event e = {
      .kind = CG_EV_MODULE_UNLOAD,
      .verdict = CG_VERDICT_DEFERRED,
      .call = "cuModuleUnload",
      .result = 0,
      .driver_result = -1,
      .driver_version = 13000,
      .pid = 1,
      .tid = 2,
      .time_ns = 3,
      .thread_mode = CG_MODE_THREAD_LOCAL,
      .capture = {.id = 1, .stream = 0x10, .tid = 2, .mode = CG_MODE_THREAD_LOCAL,
                  .status = CG_CAPTURE_ACTIVE},
      .n_prohibitors = 1,
  };
  return e;
}

static cg_summary summary_fixture(void) {
  cg_summary s = {.pid = 77, .captures_begun = 3, .captures_broken = 1, .log_path = "/tmp/cg.log"};
  s.events[CG_EV_MODULE_LOAD] = 2;
  s.events[CG_EV_MODULE_UNLOAD] = 1;
  s.verdicts[CG_VERDICT_REFUSED] = 1;
  s.verdicts[CG_VERDICT_ALLOWED] = 1;
  s.verdicts[CG_VERDICT_DEFERRED] = 1;
  return s;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- JSON helpers --------------------------------------------------------- */

static char jbuf[BIG];

/* Parse one formatted line: must end in exactly one "\n", hold no other. */
static json_t *parse_line(size_t n) {
  ck_assert_uint_lt(n, sizeof jbuf);
  ck_assert_uint_eq(strlen(jbuf), n);
  ck_assert_msg(n > 0 && jbuf[n - 1] == '\n', "line must end in \\n");
  ck_assert_msg(memchr(jbuf, '\n', n - 1) == NULL, "JSON must be one line");
  json_error_t err;
  json_t *j = json_loads(jbuf, 0, &err); /* jansson rejects invalid UTF-8 */
  ck_assert_msg(j != NULL, "invalid JSON (%s): %s", err.text, jbuf);
  ck_assert(json_is_object(j));
  return j;
}

static void expect_keys(json_t *obj, const char *const *keys, size_t n) {
  ck_assert_uint_eq(json_object_size(obj), n);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(json_object_get(obj, keys[i]) != NULL, "missing key %s", keys[i]);
}

static void expect_str(json_t *obj, const char *key, const char *want) {
  json_t *v = json_object_get(obj, key);
  ck_assert_msg(json_is_string(v), "%s is not a string", key);
  ck_assert_str_eq(json_string_value(v), want);
}

static void expect_int(json_t *obj, const char *key, long long want) {
  json_t *v = json_object_get(obj, key);
  ck_assert_msg(json_is_integer(v), "%s is not an integer", key);
  ck_assert_int_eq(json_integer_value(v), want);
}

/* ---- event JSON ----------------------------------------------------------- */

START_TEST(test_event_json_load) {
  cg_event e = load_event();
  e.n_prohibitors = 2;
  size_t n = cg_event_format_json(&e, jbuf, sizeof jbuf);
  json_t *j = parse_line(n);
  static const char *const keys[] = {
      "v", "type", "pid", "time_ns", "event", "call", "verdict", "result", "driver_result",
      "driver_version", "emulate_driver", "tid", "thread_mode", "capture", "prohibitors",
      "module", "image", "native_stack", "python_stack", "meaning"};
  expect_keys(j, keys, sizeof keys / sizeof keys[0]);
  expect_str(j, "meaning", "operation not permitted when stream is capturing");
  expect_int(j, "v", 1);
  expect_str(j, "type", "event");
  expect_int(j, "pid", 4242);
  expect_int(j, "time_ns", 1700000000123456789LL);
  expect_str(j, "event", "module-load");
  expect_str(j, "call", "cuModuleLoadData");
  expect_str(j, "verdict", "refused");
  expect_int(j, "result", 900);
  expect_int(j, "driver_result", 900);
  expect_int(j, "driver_version", 12020);
  expect_int(j, "emulate_driver", 0);
  expect_int(j, "tid", 12345);
  expect_str(j, "thread_mode", "global");
  expect_int(j, "prohibitors", 2);
  expect_str(j, "module", "0x5555deadbeef");

  json_t *c = json_object_get(j, "capture");
  static const char *const ckeys[] = {"id", "stream", "mode", "tid", "status", "began"};
  expect_keys(c, ckeys, 6);
  expect_int(c, "id", 7);
  expect_str(c, "stream", "0x7f00deadbe00");
  expect_str(c, "mode", "global");
  expect_int(c, "tid", 12345);
  expect_str(c, "status", "invalidated");
  expect_str(c, "began", "model_runner.py:1234 in capture");

  json_t *im = json_object_get(j, "image");
  static const char *const ikeys[] = {"kind", "size", "sm", "archs", "hash", "kernels",
                                      "kernels_truncated"};
  expect_keys(im, ikeys, 7);
  expect_str(im, "kind", "cubin");
  expect_int(im, "size", 5328);
  expect_int(im, "sm", 90);
  json_t *archs = json_object_get(im, "archs");
  ck_assert(json_is_array(archs));
  ck_assert_uint_eq(json_array_size(archs), 1);
  ck_assert_int_eq(json_integer_value(json_array_get(archs, 0)), 90);
  expect_str(im, "hash", "0123456789abcdeffedcba9876543210");
  json_t *ks = json_object_get(im, "kernels");
  ck_assert_uint_eq(json_array_size(ks), 2);
  ck_assert_str_eq(json_string_value(json_array_get(ks, 0)), "_causal_conv1d_update_kernel");
  ck_assert_str_eq(json_string_value(json_array_get(ks, 1)), "second_kernel");
  ck_assert(json_is_false(json_object_get(im, "kernels_truncated")));

  json_t *ns = json_object_get(j, "native_stack");
  ck_assert_uint_eq(json_array_size(ns), 3);
  for (size_t i = 0; i < 3; i++)
    ck_assert_str_eq(json_string_value(json_array_get(ns, i)), fx_native[i]);
  json_t *py = json_object_get(j, "python_stack");
  ck_assert_uint_eq(json_array_size(py), 2);
  for (size_t i = 0; i < 2; i++) {
    json_t *f = json_array_get(py, i);
    static const char *const fkeys[] = {"file", "line", "func"};
    expect_keys(f, fkeys, 3);
    expect_str(f, "file", fx_py[i].file);
    expect_int(f, "line", fx_py[i].line);
    expect_str(f, "func", fx_py[i].func);
  }
  json_decref(j);
}
END_TEST

/* A load with JIT or library options says so (never recorded); one without has no key. */
START_TEST(test_event_json_load_options) {
  cg_event e = load_event();
  e.with_options = true;
  json_t *j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
  ck_assert(json_is_true(json_object_get(j, "options")));
  json_decref(j);
  e.with_options = false;
  j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
  ck_assert_ptr_null(json_object_get(j, "options"));
  json_decref(j);
}
END_TEST

START_TEST(test_event_json_unload_and_optional_keys) {
  cg_event e = unload_event();
  json_t *j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
  /* no module handle, no image: those keys are absent */
  ck_assert_ptr_null(json_object_get(j, "module"));
  ck_assert_ptr_null(json_object_get(j, "image"));
  ck_assert_uint_eq(json_object_size(j), 17);
  expect_str(j, "event", "module-unload");
  expect_str(j, "verdict", "deferred");
  expect_int(j, "driver_result", -1);
  expect_str(j, "thread_mode", "thread-local");
  expect_str(json_object_get(j, "capture"), "began", "");
  expect_str(json_object_get(j, "capture"), "status", "active");
  ck_assert_uint_eq(json_array_size(json_object_get(j, "native_stack")), 0);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "python_stack")), 0);
  json_decref(j);
}
END_TEST

START_TEST(test_event_json_every_verdict_and_all_native) {
  cg_event e = load_event();
  e.n_native = 20; /* the JSON keeps every frame the text leaves out */
  e.emulated_version = 12020;
  for (int v = 0; v < CG_VERDICT_COUNT; v++) {
    e.verdict = (cg_verdict)v;
    json_t *j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
    expect_str(j, "verdict", cg_verdict_name((cg_verdict)v));
    expect_int(j, "emulate_driver", 12020);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "native_stack")), 20);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "native_stack"), 19)),
                     fx_native[19]);
    json_decref(j);
  }
}
END_TEST

START_TEST(test_event_json_hostile_strings) {
  cg_event e = load_event();
  static cg_py_frame py[1] = {{"dir/\"odd\"\\file.py", 3, "f\x01\x1f"}};
  e.py = py;
  e.n_py = 1;
  e.call = "cu\xff" "Load\"";
  e.capture_began = "line\nbreak\ttab";
  static const char *native[2] = {NULL, "bad\xc3(\x80)"};
  e.native = native;
  e.n_native = 2;
  /* a kernel name with a quote, control chars and invalid UTF-8 */
  memset(fx_image.kernel_names, 0, sizeof fx_image.kernel_names);
  fx_image.n_kernels = 0;
  size_t pos = 0;
  add_kernel(&fx_image, &pos, "k\"\x02\xfe");
  fx_image.names_truncated = true;
  json_t *j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
  expect_str(j, "call", "cu\xEF\xBF\xBDLoad\"");
  expect_str(json_object_get(j, "capture"), "began", "line\nbreak\ttab");
  json_t *ns = json_object_get(j, "native_stack");
  ck_assert_str_eq(json_string_value(json_array_get(ns, 0)), "");
  ck_assert_str_eq(json_string_value(json_array_get(ns, 1)), "bad\xEF\xBF\xBD(\xEF\xBF\xBD)");
  json_t *f = json_array_get(json_object_get(j, "python_stack"), 0);
  expect_str(f, "file", "dir/\"odd\"\\file.py");
  expect_str(f, "func", "f\x01\x1f");
  json_t *im = json_object_get(j, "image");
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(im, "kernels"), 0)),
                   "k\"\x02\xEF\xBF\xBD");
  ck_assert(json_is_true(json_object_get(im, "kernels_truncated")));
  json_decref(j);

  /* NULL strings everywhere still give valid JSON */
  e = unload_event();
  e.call = NULL;
  e.capture_began = NULL;
  json_decref(parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf)));
  /* a kernel-name buffer without terminators is walked inside its bounds only */
  e = load_event();
  memset(fx_image.kernel_names, 'A', sizeof fx_image.kernel_names);
  fx_image.n_kernels = 5;
  j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
  im = json_object_get(j, "image");
  ck_assert_uint_eq(json_array_size(json_object_get(im, "kernels")), 0);
  ck_assert(json_is_true(json_object_get(im, "kernels_truncated")));
  json_decref(j);
}
END_TEST

START_TEST(test_event_json_fatbin_archs) {
  cg_event e = load_event();
  fx_image.kind = CG_IMAGE_FATBIN;
  fx_image.n_archs = 3;
  fx_image.archs[0] = 80;
  fx_image.archs[1] = 86;
  fx_image.archs[2] = 90;
  fx_image.has_ptx = true;
  json_t *j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
  json_t *im = json_object_get(j, "image");
  expect_str(im, "kind", "fatbin");
  json_t *a = json_object_get(im, "archs");
  ck_assert_uint_eq(json_array_size(a), 3);
  ck_assert_int_eq(json_integer_value(json_array_get(a, 0)), 80);
  ck_assert_int_eq(json_integer_value(json_array_get(a, 2)), 90);
  json_decref(j);
  /* a corrupt arch count is clamped to the array */
  fx_image.n_archs = 1000;
  j = parse_line(cg_event_format_json(&e, jbuf, sizeof jbuf));
  ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(j, "image"), "archs")),
                    CG_IMAGE_MAX_ARCHS);
  json_decref(j);
}
END_TEST

/* ---- capture and summary JSON -------------------------------------------- */

START_TEST(test_capture_json) {
  cg_capture c = {.id = 3, .stream = 0xabc, .tid = 99, .mode = CG_MODE_RELAXED,
                  .status = CG_CAPTURE_FAILED, .begin_ns = 1000, .end_ns = 5000, .events = 4};
  cg_capture_record r = {.capture = &c, .pid = 4242, .began = "x.py:1 in g", .ended = true, .end_result = 901};
  json_t *j = parse_line(cg_capture_format_json(&r, jbuf, sizeof jbuf));
  static const char *const keys[] = {"v",      "type",   "pid",    "time_ns", "id",
                                     "stream", "mode",   "tid",    "status",  "begin_ns",
                                     "end_ns", "events", "began",  "end_result", "broken_by"};
  expect_keys(j, keys, sizeof keys / sizeof keys[0]);
  expect_int(j, "v", 1);
  expect_str(j, "type", "capture");
  expect_int(j, "pid", 4242);
  expect_int(j, "time_ns", 5000); /* an ended capture is recorded at its end */
  expect_int(j, "id", 3);
  expect_str(j, "stream", "0xabc");
  expect_str(j, "mode", "relaxed");
  expect_int(j, "tid", 99);
  expect_str(j, "status", "failed");
  expect_int(j, "begin_ns", 1000);
  expect_int(j, "end_ns", 5000);
  expect_int(j, "events", 4);
  expect_str(j, "began", "x.py:1 in g");
  expect_int(j, "end_result", 901);
  /* broken, and capguard saw nothing break it: null, never a guess */
  ck_assert(json_is_null(json_object_get(j, "broken_by")));
  json_decref(j);

  /* broken by a call capguard saw: the first offender, with its Python line */
  cg_offender off = {.call = "cuMemAlloc_v2", .kind = CG_EV_ALLOCATION, .verdict = CG_VERDICT_REFUSED,
                     .result = 900, .tid = 7, .time_ns = 4000, .python = "app.py:40 in step",
                     .where = "app.py:40 in step (libfoo.so(f+0x1))"};
  r.broken_by = &off;
  r.repeats = 12;
  j = parse_line(cg_capture_format_json(&r, jbuf, sizeof jbuf));
  expect_int(j, "repeats", 12);
  json_t *b = json_object_get(j, "broken_by");
  ck_assert(json_is_object(b));
  expect_str(b, "call", "cuMemAlloc_v2");
  expect_str(b, "event", "allocation");
  expect_str(b, "verdict", "refused");
  expect_int(b, "result", 900);
  expect_int(b, "tid", 7);
  expect_int(b, "time_ns", 4000);
  expect_str(b, "python", "app.py:40 in step");
  expect_str(b, "where", "app.py:40 in step (libfoo.so(f+0x1))");
  json_decref(j);
  char line[1024];
  cg_capture_format_broken_text(&r, line, sizeof line);
  ck_assert_str_eq(line, "capguard: capture 3 (stream 0xabc, relaxed, began at x.py:1 in g) broke (its end "
                         "returned 901 operation failed due to a previous error during capture): first "
                         "offender cuMemAlloc_v2 at app.py:40 in step (libfoo.so(f+0x1)) (refused: 900 "
                         "operation not permitted when stream is capturing, thread 7)\n");
  r.broken_by = NULL;
  cg_capture_format_broken_text(&r, line, sizeof line);
  ck_assert_msg(strstr(line, ": broken by a call capguard does not watch\n") != NULL, "%s", line);
  /* a reader of a log that does not say gives its own words instead */
  r.no_offender = "the log does not say which call broke it";
  cg_capture_format_broken_text(&r, line, sizeof line);
  ck_assert_msg(strstr(line, "): the log does not say which call broke it\n") != NULL, "%s", line);
  ck_assert_ptr_null(strstr(line, "does not watch"));
  r.no_offender = NULL;

  /* an ended capture has no broken_by at all */
  c.status = CG_CAPTURE_ENDED;
  r.end_result = 0;
  j = parse_line(cg_capture_format_json(&r, jbuf, sizeof jbuf));
  ck_assert_ptr_null(json_object_get(j, "broken_by"));
  expect_int(j, "end_result", 0);
  json_decref(j);

  /* still open at exit: end_ns 0, time_ns is the time of writing, no end_result */
  c.end_ns = 0;
  c.status = CG_CAPTURE_ACTIVE;
  r = (cg_capture_record){.capture = &c, .pid = 1};
  uint64_t before = now_ns();
  j = parse_line(cg_capture_format_json(&r, jbuf, sizeof jbuf));
  uint64_t after = now_ns();
  expect_int(j, "end_ns", 0);
  expect_str(j, "status", "active");
  expect_str(j, "began", "");
  ck_assert_uint_ge((uint64_t)json_integer_value(json_object_get(j, "time_ns")), before);
  ck_assert_uint_le((uint64_t)json_integer_value(json_object_get(j, "time_ns")), after);
  json_decref(j);
}
END_TEST

START_TEST(test_summary_json) {
  cg_summary s = summary_fixture();
  s.primed_loaded = 5;
  s.primed_served = 4;
  s.primed_unused = 1;
  s.recorded = 2;
  uint64_t before = now_ns();
  json_t *j = parse_line(cg_summary_format_json(&s, jbuf, sizeof jbuf));
  uint64_t after = now_ns();
  static const char *const keys[] = {"v", "type", "pid", "time_ns", "captures",
                                     "captures_broken", "events", "verdicts", "primed_loaded",
                                     "primed_served", "primed_unused", "recorded", "captures_timed",
                                     "capture_ns", "request_path_loads", "request_path_load_ns", "log"};
  expect_keys(j, keys, sizeof keys / sizeof keys[0]);
  expect_int(j, "v", 1);
  expect_str(j, "type", "summary");
  expect_int(j, "pid", 77);
  uint64_t t = (uint64_t)json_integer_value(json_object_get(j, "time_ns"));
  ck_assert(t >= before && t <= after);
  expect_int(j, "captures", 3);
  expect_int(j, "captures_broken", 1);
  json_t *ev = json_object_get(j, "events");
  ck_assert_uint_eq(json_object_size(ev), CG_EV_KIND_COUNT);
  expect_int(ev, "module-load", 2);
  expect_int(ev, "module-unload", 1);
  json_t *vd = json_object_get(j, "verdicts");
  ck_assert_uint_eq(json_object_size(vd), CG_VERDICT_COUNT);
  for (int v = 0; v < CG_VERDICT_COUNT; v++)
    expect_int(vd, cg_verdict_name((cg_verdict)v), (long long)s.verdicts[v]);
  expect_int(j, "primed_loaded", 5);
  expect_int(j, "primed_served", 4);
  expect_int(j, "primed_unused", 1);
  expect_int(j, "recorded", 2);
  expect_str(j, "log", "/tmp/cg.log");
  json_decref(j);
}
END_TEST

/* Capture time: the totals always; the first begin and replay, the slowest
 * with where each began, and the rank only when known. */
START_TEST(test_summary_capture_time_json) {
  cg_summary s = summary_fixture();
  s.captures_timed = 3;
  s.capture_ns = 41200000000ull;
  s.first_capture_ns = 1000;
  s.first_replay_ns = 5000;
  s.n_slowest = 2;
  s.slowest[0].id = 7;
  s.slowest[0].ns = 800000000;
  s.slowest[0].began = "model_runner.py:12 in capture \"x\"";
  s.slowest[1].id = 2;
  s.slowest[1].ns = 5;
  s.rank_known = true;
  s.rank = 0;
  s.world_size = 8;
  json_t *j = parse_line(cg_summary_format_json(&s, jbuf, sizeof jbuf));
  expect_int(j, "captures_timed", 3);
  expect_int(j, "capture_ns", 41200000000ll);
  expect_int(j, "first_capture_ns", 1000);
  expect_int(j, "first_replay_ns", 5000);
  expect_int(j, "rank", 0);
  expect_int(j, "world_size", 8);
  json_t *slow = json_object_get(j, "slowest");
  ck_assert(json_is_array(slow));
  ck_assert_uint_eq(json_array_size(slow), 2);
  expect_int(json_array_get(slow, 0), "id", 7);
  expect_int(json_array_get(slow, 0), "ns", 800000000);
  expect_str(json_array_get(slow, 0), "began", "model_runner.py:12 in capture \"x\"");
  expect_str(json_array_get(slow, 1), "began", "");
  json_decref(j);
  s.rank_known = false;
  s.n_slowest = 0;
  s.first_capture_ns = s.first_replay_ns = 0;
  j = parse_line(cg_summary_format_json(&s, jbuf, sizeof jbuf));
  ck_assert(!json_object_get(j, "rank") && !json_object_get(j, "world_size") && !json_object_get(j, "slowest"));
  ck_assert(!json_object_get(j, "first_capture_ns") && !json_object_get(j, "first_replay_ns"));
  json_decref(j);
}
END_TEST

/* ---- escaping ------------------------------------------------------------- */

/* s as the log's records escape every string: the value of a capture
 * record's "began" (no quotes), written into buf; returns its length. */
static size_t json_escape(const char *s, char *buf, size_t cap) {
  static char rec[4096];
  cg_capture c = {.id = 1, .stream = 0xabc, .tid = 1, .mode = CG_MODE_GLOBAL, .status = CG_CAPTURE_ACTIVE};
  cg_capture_record r = {.capture = &c, .pid = 1, .began = s};
  size_t n = cg_capture_format_json(&r, rec, sizeof rec);
  ck_assert_uint_lt(n, sizeof rec);
  const char *p = strstr(rec, "\"" CG_KEY_BEGAN "\":\"");
  ck_assert_ptr_nonnull(p);
  p += strlen("\"" CG_KEY_BEGAN "\":\"");
  size_t len = 0;
  while (*p && *p != '"') {
    size_t k = *p == '\\' ? 2 : 1;
    for (size_t i = 0; i < k && p[i]; i++, len++)
      if (len + 1 < cap)
        buf[len] = p[i];
    p += k;
  }
  ck_assert_int_eq(*p, '"');
  buf[len < cap ? len : cap - 1] = '\0';
  return len;
}

/* Escape s, wrap it in quotes, parse it back: the string JSON readers see. */
static void roundtrip(const char *s, const char *want) {
  char esc[1024];
  size_t n = json_escape(s, esc, sizeof esc);
  ck_assert_uint_lt(n, sizeof esc);
  ck_assert_uint_eq(strlen(esc), n);
  char quoted[1100];
  snprintf(quoted, sizeof quoted, "\"%s\"", esc);
  json_error_t err;
  json_t *j = json_loads(quoted, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
  ck_assert_msg(j != NULL, "escape of %s gave invalid JSON %s: %s", want, quoted, err.text);
  ck_assert_str_eq(json_string_value(j), want);
  json_decref(j);
}

START_TEST(test_escape_exact) {
  char out[64];
  ck_assert_uint_eq(json_escape("a\"b\\c", out, sizeof out), 7);
  ck_assert_str_eq(out, "a\\\"b\\\\c");
  json_escape("\n\r\t\b\f", out, sizeof out);
  ck_assert_str_eq(out, "\\n\\r\\t\\b\\f");
  json_escape("\x01\x1f\x7f", out, sizeof out);
  ck_assert_str_eq(out, "\\u0001\\u001f\x7f");
  json_escape("/plain/", out, sizeof out);
  ck_assert_str_eq(out, "/plain/");
  ck_assert_uint_eq(json_escape(NULL, out, sizeof out), 0);
  ck_assert_str_eq(out, "");
  ck_assert_uint_eq(json_escape("", out, sizeof out), 0);
}
END_TEST

START_TEST(test_escape_roundtrip) {
  /* every control character, one by one */
  for (int c = 1; c < 0x20; c++) {
    char s[4] = {'x', (char)c, 'y', 0};
    roundtrip(s, s);
  }
  roundtrip("quote\" back\\slash", "quote\" back\\slash");
  /* valid UTF-8 passes through: 2, 3 and 4 byte sequences, edges of the ranges */
  roundtrip("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  roundtrip("\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf",
            "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
  /* invalid bytes become U+FFFD, one per byte */
#define R "\xEF\xBF\xBD"
  roundtrip("a\x80z", "a" R "z");                          /* lone continuation */
  roundtrip("a\xc0\xafz", "a" R R "z");                    /* overlong '/' */
  roundtrip("a\xe0\x80\xafz", "a" R R R "z");              /* overlong 3-byte */
  roundtrip("a\xed\xa0\x80z", "a" R R R "z");              /* UTF-16 surrogate */
  roundtrip("a\xf4\x90\x80\x80z", "a" R R R R "z");        /* above U+10FFFF */
  roundtrip("a\xf5\xff\xfez", "a" R R R "z");              /* never valid */
  roundtrip("a\xe2\x82", "a" R R);                         /* cut off at the end */
  roundtrip("a\xf0\x9f\x98", "a" R R R);                   /* cut off 4-byte */
  roundtrip("\xc3(", R "(");                               /* lead without continuation */
#undef R
}
END_TEST

/* ---- the snprintf contract ----------------------------------------------- */

typedef size_t (*fmt_fn)(const void *arg, char *buf, size_t cap);

static size_t f_event_json(const void *a, char *b, size_t c) { return cg_event_format_json(a, b, c); }
static size_t f_event_text(const void *a, char *b, size_t c) { return cg_event_format_text(a, b, c); }
static size_t f_capture_json(const void *a, char *b, size_t c) {
  static const cg_offender off = {.call = "cuCtxSynchronize", .kind = CG_EV_SYNCHRONIZE,
                                  .verdict = CG_VERDICT_REFUSED, .result = 900, .python = "a.py:1 in f",
                                  .where = "a.py:1 in f (x.so)"};
  cg_capture_record r = {.capture = a, .pid = 5, .began = "began \"here\"", .ended = true,
                         .end_result = 901, .repeats = 2, .broken_by = &off};
  return cg_capture_format_json(&r, b, c);
}
static size_t f_summary_json(const void *a, char *b, size_t c) { return cg_summary_format_json(a, b, c); }
static size_t f_summary_text(const void *a, char *b, size_t c) { return cg_summary_format_text(a, b, c); }

static void check_contract(const char *what, fmt_fn f, const void *arg, bool clocked) {
  static char full[BIG], buf[BIG + 64];
  size_t n = f(arg, full, sizeof full);
  ck_assert_msg(n > 0 && n < sizeof full, "%s: length %zu", what, n);
  ck_assert_uint_eq(strlen(full), n);
  ck_assert_uint_eq(f(arg, NULL, 0), n);
  /* a summary is stamped with the clock at each call: its digits may differ */
  size_t clock_from = 0, clock_to = 0;
  const char *t = strstr(full, "\"time_ns\":");
  if (t && clocked) {
    clock_from = (size_t)(t - full) + 10;
    clock_to = clock_from + strspn(full + clock_from, "0123456789");
  }
  for (size_t cap = 0; cap <= n + 2; cap++) {
    memset(buf, 0x5a, n + 64);
    ck_assert_msg(f(arg, buf, cap) == n, "%s cap %zu: wrong length", what, cap);
    size_t spill = cap;
    while (spill < n + 64 && buf[spill] == 0x5a) spill++;
    ck_assert_msg(spill == n + 64, "%s cap %zu: wrote byte %zu", what, cap, spill);
    if (cap == 0) continue;
    size_t kept = cap - 1 < n ? cap - 1 : n;
    ck_assert_msg(buf[kept] == '\0', "%s cap %zu: not terminated", what, cap);
    size_t same = 0;
    while (same < kept && (buf[same] == full[same] || (same >= clock_from && same < clock_to)))
      same++;
    ck_assert_msg(same == kept, "%s cap %zu: prefix differs at %zu", what, cap, same);
  }
}

START_TEST(test_truncation_contract) {
  cg_event e = load_event();
  e.n_native = 20;
  e.n_prohibitors = 3;
  check_contract("event json", f_event_json, &e, false);
  check_contract("event text", f_event_text, &e, false);
  cg_event u = unload_event();
  check_contract("unload json", f_event_json, &u, false);
  check_contract("unload text", f_event_text, &u, false);
  cg_capture c = {.id = 1, .stream = 2, .tid = 3, .end_ns = 4, .status = CG_CAPTURE_FAILED};
  check_contract("capture json", f_capture_json, &c, false);
  cg_summary s = summary_fixture();
  s.recorded = 1;
  check_contract("summary json", f_summary_json, &s, true);
  check_contract("summary text", f_summary_text, &s, false);
}
END_TEST

/* ---- text ------------------------------------------------------------------ */

static char tbuf[BIG];

static const char *text_of(const cg_event *e) {
  size_t n = cg_event_format_text(e, tbuf, sizeof tbuf);
  ck_assert_uint_lt(n, sizeof tbuf);
  ck_assert_uint_eq(strlen(tbuf), n);
  ck_assert_msg(n > 0 && tbuf[n - 1] == '\n', "text must end in \\n");
  return tbuf;
}

/* The first line of the text, copied. */
static const char *line1(const char *t) {
  static char l[4096];
  size_t n = strcspn(t, "\n");
  ck_assert_uint_lt(n, sizeof l);
  memcpy(l, t, n);
  l[n] = 0;
  return l;
}

static size_t count_lines(const char *t) {
  size_t n = 0;
  for (; *t; t++) n += *t == '\n';
  return n;
}

/* Each piece occurs, after the one before it. */
static void expect_in_order(const char *t, const char *const *pieces, size_t n) {
  const char *at = t;
  for (size_t i = 0; i < n; i++) {
    const char *p = strstr(at, pieces[i]);
    ck_assert_msg(p != NULL, "missing or out of order: \"%s\" in:\n%s", pieces[i], t);
    at = p + strlen(pieces[i]);
  }
}

START_TEST(test_text_layout) {
  cg_event e = load_event();
  const char *t = text_of(&e);
  ck_assert_str_eq(line1(t),
                   "capguard: cuModuleLoadData during capture 7 (stream 0x7f00deadbe00, global mode, "
                   "begun by thread 12345): refused by the driver with error 900 operation not "
                   "permitted when stream is capturing; the capture is now broken");
  static const char *const pieces[] = {
      "capguard: cuModuleLoadData during capture 7",
      "\n  kernels: _causal_conv1d_update_kernel, second_kernel\n",
      "  image: cubin, 5328 bytes, sm_90, xxh3 0123456789abcdeffedcba9876543210\n",
      "  capture began: model_runner.py:1234 in capture\n",
      "  python stack (most recent call first):\n",
      "    File \"/opt/triton/compiler.py\", line 1234, in load_binary\n",
      "    File \"model.py\", line 12, in f\n",
      "  native stack:\n",
      "    #0 libfoo.so(frame_0+0x0)\n",
      "    #1 libfoo.so(frame_1+0x10)\n",
      "    #2 libfoo.so(frame_2+0x20)\n",
  };
  expect_in_order(t, pieces, sizeof pieces / sizeof pieces[0]);
  ck_assert_uint_eq(count_lines(t), 1 + 1 + 1 + 1 + 3 + 4);
}
END_TEST

START_TEST(test_text_verdicts) {
  cg_event e = load_event();
  e.verdict = CG_VERDICT_ALLOWED;
  e.driver_version = 13000;
  e.capture.status = CG_CAPTURE_ACTIVE;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)),
                               "): allowed by this driver (13.0 >= 12.3); drivers before 12.3 refuse it"));
  e.driver_version = 12080;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)), "(12.8 >= 12.3)"));
  e.verdict = CG_VERDICT_EMULATED;
  e.emulated_version = 12020;
  e.driver_result = -1;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)),
                               "): refused by capguard emulating driver 12.2 "
                               "(CAPGUARD_EMULATE_DRIVER=12020); the capture is now broken"));
  e.verdict = CG_VERDICT_SERVED;
  ck_assert_ptr_nonnull(
      strstr(line1(text_of(&e)), "): served from the priming file: no loader call reached the driver"));
  e.verdict = CG_VERDICT_RESCUED;
  /* the rescue says what it rescued, by which setting (a load here), not all three */
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)), "): made in relaxed mode for this one call "
                                                   "(CAPGUARD_RESCUE=1: a driver before 12.3 "
                                                   "refuses a load during capture)"));
  ck_assert_ptr_null(strstr(line1(text_of(&e)), "event query"));
  e.kind = CG_EV_ALLOCATION;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)), "(CAPGUARD_RESCUE=1: an allocation during "
                                                   "capture breaks it)"));
  e.kind = CG_EV_SYNCHRONIZE;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)), "(guard mode: a query of an event in no "
                                                   "capture, from a thread a capture prohibits)"));
  e.kind = CG_EV_MODULE_LOAD;
  e.verdict = CG_VERDICT_FAILED;
  e.driver_result = 2;
  e.result = 2;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)), "): the driver returned error 2"));
  cg_event u = unload_event();
  ck_assert_str_eq(line1(text_of(&u)),
                   "capguard: cuModuleUnload during capture 1 (stream 0x10, thread-local mode, "
                   "begun by thread 2): returned success; the unload runs when the capture ends");
  /* each verdict's line differs from every other's */
  char seen[CG_VERDICT_COUNT][512];
  for (int v = 0; v < CG_VERDICT_COUNT; v++) {
    e.verdict = (cg_verdict)v;
    /* a line cut short here could hide a difference: it must fit */
    ck_assert_int_lt(snprintf(seen[v], sizeof seen[v], "%s", line1(text_of(&e))), (int)sizeof seen[v]);
    for (int w = 0; w < v; w++) ck_assert_str_ne(seen[v], seen[w]);
  }
}
END_TEST

START_TEST(test_text_more_captures) {
  cg_event e = load_event();
  e.n_prohibitors = 3;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)),
                               "begun by thread 12345) (+2 more captures): refused by the driver "
                               "with error 900 operation not permitted when stream is capturing; the captures are now broken"));
  e.n_prohibitors = 2;
  ck_assert_ptr_nonnull(strstr(line1(text_of(&e)), ") (+1 more capture): "));
  e.n_prohibitors = 1;
  ck_assert_ptr_null(strstr(line1(text_of(&e)), "more capture"));
}
END_TEST

START_TEST(test_text_omits_empty_sections) {
  cg_event u = unload_event();
  const char *t = text_of(&u);
  ck_assert_uint_eq(count_lines(t), 1); /* no image, no stacks, no began */
  ck_assert_ptr_null(strstr(t, "kernels:"));
  ck_assert_ptr_null(strstr(t, "stack"));
  /* a load whose image was not inspected: names unavailable, no image line */
  cg_event e = load_event();
  e.image = NULL;
  e.n_py = 0;
  e.n_native = 0;
  e.capture_began = "";
  t = text_of(&e);
  ck_assert_uint_eq(count_lines(t), 2);
  ck_assert_ptr_nonnull(strstr(t, "\n  kernels: (names unavailable)\n"));
  ck_assert_ptr_null(strstr(t, "image:"));
  ck_assert_ptr_null(strstr(t, "capture began"));
  /* an image without names */
  e = load_event();
  fx_image.n_kernels = 0;
  ck_assert_ptr_nonnull(strstr(text_of(&e), "\n  kernels: (names unavailable)\n"));
}
END_TEST

extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* With a demangler (the host's, lent by the shim), kernel names on the text
 * read as a person reads them (capguard/kernel_name.h), a template's
 * instances named once; the JSON keeps the exact symbols; without one,
 * names as they are. */
START_TEST(test_text_kernels_demangled) {
  cg_event e = load_event();
  memset(fx_image.kernel_names, 0, sizeof fx_image.kernel_names);
  fx_image.n_kernels = 0;
  size_t pos = 0;
  static const char dot_do_o[] = "_ZN13pytorch_flash25flash_bwd_dot_do_o_kernelILb0E23Flash_bwd_kernel_traitsILi128ELi64"
                                 "ELi128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass10bfloat16_tE19Flash_kernel_traitsILi128E"
                                 "Li64ELi128ELi8ES3_EEEEvNS_16Flash_bwd_paramsE";
  static const char dot_do_o_1[] = "_ZN13pytorch_flash25flash_bwd_dot_do_o_kernelILb1E23Flash_bwd_kernel_traitsILi128ELi"
                                   "64ELi128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlass10bfloat16_tE19Flash_kernel_traitsILi128"
                                   "ELi64ELi128ELi8ES3_EEEEvNS_16Flash_bwd_paramsE";
  add_kernel(&fx_image, &pos, dot_do_o);
  add_kernel(&fx_image, &pos, dot_do_o_1);
  add_kernel(&fx_image, &pos, "_causal_conv1d_update_kernel");
  e.demangle = __cxa_demangle;
  const char *t = text_of(&e);
  ck_assert_ptr_nonnull(strstr(t, "\n  kernels: pytorch_flash::flash_bwd_dot_do_o_kernel<...>, "
                                  "_causal_conv1d_update_kernel, ... (3 in all)\n"));
  ck_assert_ptr_null(strstr(t, "_ZN"));
  char json[8192];
  cg_event_format_json(&e, json, sizeof json);
  ck_assert_ptr_nonnull(strstr(json, dot_do_o));
  e.demangle = NULL;
  t = text_of(&e);
  ck_assert_ptr_nonnull(strstr(t, "\n  kernels: _ZN13pytorch_flash25flash_bwd_dot_do_o_kernelILb0E"));
}
END_TEST

/* A stale read's kernel in the text's form too, the JSON's the symbol. */
START_TEST(test_text_stale_kernel_demangled) {
  cg_stale_read_info st = {.exec = 0x1000, .start = 0x7f0000, .size = 4096, .buffer_id = 3,
                           .kernel = "_ZN2at6native3useEv", .arg = 1, .reads = 1};
  cg_event e = {.kind = CG_EV_STALE_LAUNCH, .verdict = CG_VERDICT_STALE, .call = "cuGraphLaunch",
                .pid = 1, .tid = 1, .stale = &st, .demangle = __cxa_demangle};
  const char *t = text_of(&e);
  ck_assert_ptr_nonnull(strstr(t, ": kernel at::native::use, argument 1"));
  char json[8192];
  cg_event_format_json(&e, json, sizeof json);
  ck_assert_ptr_nonnull(strstr(json, "\"_ZN2at6native3useEv\""));
  e.demangle = NULL;
  ck_assert_ptr_nonnull(strstr(text_of(&e), ": kernel _ZN2at6native3useEv, argument 1"));
}
END_TEST

START_TEST(test_text_caps_and_cleaning) {
  cg_event e = load_event();
  e.n_native = 20;
  const char *t = text_of(&e);
  ck_assert_ptr_nonnull(strstr(t, "    #11 libfoo.so(frame_11+0xb0)\n"));
  ck_assert_ptr_null(strstr(t, "#12 "));
  ck_assert_ptr_nonnull(strstr(t, "    ... (8 more frames in the log)\n"));
  /* many kernels: the first few, then how many in all */
  memset(fx_image.kernel_names, 0, sizeof fx_image.kernel_names);
  fx_image.n_kernels = 0;
  size_t pos = 0;
  char name[16];
  for (int i = 0; i < 30; i++) {
    snprintf(name, sizeof name, "kern%d", i);
    add_kernel(&fx_image, &pos, name);
  }
  t = text_of(&e);
  ck_assert_ptr_nonnull(strstr(t, "  kernels: kern0, kern1, kern2, kern3, kern4, kern5, kern6, "
                                  "kern7, ... (30 in all)\n"));
  /* control characters from the process cannot reach the terminal */
  memset(fx_image.kernel_names, 0, sizeof fx_image.kernel_names);
  fx_image.n_kernels = 0;
  pos = 0;
  add_kernel(&fx_image, &pos, "evil\x1b[2Jkernel");
  e.capture_began = "a\nb";
  t = text_of(&e);
  ck_assert_ptr_nonnull(strstr(t, "  kernels: evil?[2Jkernel\n"));
  ck_assert_ptr_nonnull(strstr(t, "  capture began: a?b\n"));
  ck_assert_ptr_null(strchr(t, '\x1b'));
  /* fatbin with several archs and PTX */
  fx_image.kind = CG_IMAGE_FATBIN;
  fx_image.n_archs = 2;
  fx_image.archs[0] = 80;
  fx_image.archs[1] = 90;
  fx_image.has_ptx = true;
  ck_assert_ptr_nonnull(strstr(text_of(&e), "  image: fatbin, 5328 bytes, sm_80/sm_90 +ptx, xxh3 "));
  fx_image.kind = CG_IMAGE_UNKNOWN;
  fx_image.why_unknown = "no ELF or fatbin magic";
  ck_assert_ptr_nonnull(strstr(text_of(&e), "  image: unknown (no ELF or fatbin magic)\n"));
}
END_TEST

START_TEST(test_summary_text) {
  cg_summary s = summary_fixture();
  size_t n = cg_summary_format_text(&s, jbuf, sizeof jbuf);
  ck_assert_uint_eq(strlen(jbuf), n);
  ck_assert_str_eq(jbuf, "capguard: 3 captures (1 broken), events: 2 module-load, 1 module-unload "
                         "(1 refused, 1 allowed, 1 deferred); log: /tmp/cg.log\n");
  s.log_path = NULL;
  s.captures_broken = 0;
  s.primed_loaded = 4;
  s.primed_served = 3;
  s.primed_unused = 1;
  cg_summary_format_text(&s, jbuf, sizeof jbuf);
  ck_assert_str_eq(jbuf, "capguard: 3 captures, events: 2 module-load, 1 module-unload "
                         "(1 refused, 1 allowed, 1 deferred); priming: 4 preloaded, 3 served, "
                         "1 unused, 0 recorded; no log (set CAPGUARD_LOG=path)\n");
  cg_summary quiet = {.captures_begun = 1, .log_path = "l"};
  cg_summary_format_text(&quiet, jbuf, sizeof jbuf);
  ck_assert_str_eq(jbuf, "capguard: 1 capture, no events; log: l\n");
}
END_TEST

/* Where a report says a call was made: past the frameworks' own Python. */
START_TEST(test_python_machinery) {
  static const char *const machinery[] = {
      "/usr/lib/python3/site-packages/torch/cuda/graphs.py", "/x/triton/runtime/jit.py",
      "/x/site-packages/cupy/_creation/basic.py", "/x/site-packages/cupy_backends/cuda/api/runtime.pyx",
      "/x/numba/cuda/cudadrv/driver.py", "/x/warp/context.py"};
  for (size_t i = 0; i < sizeof machinery / sizeof machinery[0]; i++)
    ck_assert_msg(cg_py_file_is_machinery(machinery[i]), "%s", machinery[i]);
  static const char *const users[] = {"/srv/app/model_runner.py", "torchvision_like.py", "cupyish.py", NULL};
  for (size_t i = 0; i < sizeof users / sizeof users[0]; i++)
    ck_assert_msg(!cg_py_file_is_machinery(users[i]), "%s", users[i] ? users[i] : "NULL");
}
END_TEST

START_TEST(test_names_and_null) {
  ck_assert_str_eq(cg_event_kind_name(CG_EV_MODULE_LOAD), "module-load");
  ck_assert_str_eq(cg_event_kind_name(CG_EV_MODULE_UNLOAD), "module-unload");
  ck_assert_str_eq(cg_event_kind_name(CG_EV_EVENT_WAIT), "event-wait");
  ck_assert_str_eq(cg_event_kind_name(CG_EV_KIND_COUNT), "unknown");
  static const char *const names[CG_VERDICT_COUNT] = {"refused", "allowed", "emulated", "served",
                                                      "rescued", "deferred", "failed", "deferred-free",
                                                      "deferred-destroy", "not-ready", "escaped", "broke", "stale",
                                                      "waiting"};
  for (int v = 0; v < CG_VERDICT_COUNT; v++) ck_assert_str_eq(cg_verdict_name((cg_verdict)v), names[v]);
  ck_assert_str_eq(cg_verdict_name(CG_VERDICT_COUNT), "unknown");
  /* NULL inputs give a clear line, never a crash */
  char b[128];
  ck_assert_uint_gt(cg_event_format_json(NULL, b, sizeof b), 0);
  ck_assert_uint_gt(cg_event_format_text(NULL, b, sizeof b), 0);
  ck_assert_uint_gt(cg_capture_format_json(NULL, b, sizeof b), 0);
  ck_assert_uint_gt(cg_capture_format_broken_text(NULL, b, sizeof b), 0);
  ck_assert_uint_gt(cg_summary_format_json(NULL, b, sizeof b), 0);
  ck_assert_uint_gt(cg_summary_format_text(NULL, b, sizeof b), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("event_format");
  TCase *tc = tcase_create("json");
  tcase_add_test(tc, test_event_json_load);
  tcase_add_test(tc, test_event_json_load_options);
  tcase_add_test(tc, test_event_json_unload_and_optional_keys);
  tcase_add_test(tc, test_event_json_every_verdict_and_all_native);
  tcase_add_test(tc, test_event_json_hostile_strings);
  tcase_add_test(tc, test_event_json_fatbin_archs);
  tcase_add_test(tc, test_capture_json);
  tcase_add_test(tc, test_summary_json);
  tcase_add_test(tc, test_summary_capture_time_json);
  tcase_add_test(tc, test_escape_exact);
  tcase_add_test(tc, test_escape_roundtrip);
  tcase_add_test(tc, test_truncation_contract);
  suite_add_tcase(s, tc);
  tc = tcase_create("text");
  tcase_add_test(tc, test_text_layout);
  tcase_add_test(tc, test_text_verdicts);
  tcase_add_test(tc, test_text_more_captures);
  tcase_add_test(tc, test_text_omits_empty_sections);
  tcase_add_test(tc, test_text_caps_and_cleaning);
  tcase_add_test(tc, test_text_kernels_demangled);
  tcase_add_test(tc, test_text_stale_kernel_demangled);
  tcase_add_test(tc, test_summary_text);
  tcase_add_test(tc, test_python_machinery);
  tcase_add_test(tc, test_names_and_null);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
