/* Unit tests of the capture-state model (detect/capture/capture_model.c).
 * The central test replays the measured ground-truth table
 * (docs/driver-semantics.md) against the model's rule. */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "capguard/capture_model.h"
#include "check_run.h"

/* ---- the ground-truth table, as data ------------------------------------ */

/* What the measured driver (580.159.04, driver API 13000) did. */
typedef enum {
  OK,     /* call succeeded, capture still active, graph ran right */
  REFUSED /* 900+inv: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, capture invalidated */
} outcome;

/* A column of the table turned into a model scenario: thread T1 begins a
 * capture on a stream in capture_mode, then the calling thread (T1 itself, or
 * a second thread T2) makes the call, in the default GLOBAL thread mode, or in
 * RELAXED when it swapped its mode with cuThreadExchangeStreamCaptureMode. */
typedef struct {
  const char *name;
  bool same_thread;             /* caller is the thread that began the capture */
  cg_capture_mode capture_mode; /* mode passed to cuStreamBeginCapture */
  bool swap;                    /* caller switched itself to RELAXED around the call */
} column;

enum { N_COLUMNS = 7 };

static const column columns[N_COLUMNS] = {
    /* same/global: the capturing thread calls; capture begun GLOBAL; caller in default GLOBAL mode */
    {"same/global", true, CG_MODE_GLOBAL, false},
    /* same/thread-local: the capturing thread calls; capture begun THREAD_LOCAL; caller GLOBAL */
    {"same/thread-local", true, CG_MODE_THREAD_LOCAL, false},
    /* same/relaxed: the capturing thread calls; capture begun RELAXED; caller GLOBAL */
    {"same/relaxed", true, CG_MODE_RELAXED, false},
    /* same/global+swap: the capturing thread calls in RELAXED thread mode; capture begun GLOBAL */
    {"same/global+swap", true, CG_MODE_GLOBAL, true},
    /* other/global: a second thread (GLOBAL mode) calls; capture begun GLOBAL by the first */
    {"other/global", false, CG_MODE_GLOBAL, false},
    /* other/thread-local: a second thread (GLOBAL mode) calls; capture begun THREAD_LOCAL */
    {"other/thread-local", false, CG_MODE_THREAD_LOCAL, false},
    /* other/global+swap: a second thread in RELAXED thread mode calls; capture begun GLOBAL */
    {"other/global+swap", false, CG_MODE_GLOBAL, true},
};

typedef struct {
  const char *call;
  bool is_load; /* a module/library load: allowed under prohibition by drivers >= 12.3 */
  outcome on_13_0[N_COLUMNS];
} row;

/* The module rows, copied from the table (order of columns as above). */
static const row module_rows[] = {
    {"cuModuleLoadData (cubin)", true, {OK, OK, OK, OK, OK, OK, OK}},
    {"cuModuleLoadData (PTX)", true, {OK, OK, OK, OK, OK, OK, OK}},
    {"cuModuleLoadDataEx (cubin)", true, {OK, OK, OK, OK, OK, OK, OK}},
    {"cuModuleLoadFatBinary", true, {OK, OK, OK, OK, OK, OK, OK}},
    {"cuLibraryLoadData + cuLibraryGetKernel", true, {OK, OK, OK, OK, OK, OK, OK}},
    {"cuModuleUnload", false, {REFUSED, REFUSED, OK, OK, REFUSED, OK, OK}},
};
#define N_MODULE_ROWS (sizeof module_rows / sizeof module_rows[0])
#define UNLOAD_ROW 5

/* Other measured rows the same prohibition rule decides (the "potentially
 * unsafe" calls that are not tied to the capturing stream itself). */
static const row rule_rows[] = {
    {"cuMemAlloc", false, {REFUSED, REFUSED, OK, OK, REFUSED, OK, OK}},
    {"cuMemFree", false, {REFUSED, REFUSED, OK, OK, REFUSED, OK, OK}},
    {"cuMemHostAlloc", false, {REFUSED, REFUSED, OK, OK, REFUSED, OK, OK}},
    {"cuStreamSynchronize (another, idle stream)", false, {REFUSED, REFUSED, OK, OK, REFUSED, OK, OK}},
    {"cuEventQuery / cuEventSynchronize", false, {REFUSED, REFUSED, OK, OK, REFUSED, OK, OK}},
};
#define N_RULE_ROWS (sizeof rule_rows / sizeof rule_rows[0])

enum { T1 = 1001, T2 = 1002, STREAM = 0x7f00aa00 };

/* Build the column's scenario in a fresh model and ask the model whether the
 * caller is prohibited. *n_out: how many prohibitors it listed. */
static bool column_prohibited(const column *c, size_t *n_out) {
  cg_model *m = cg_model_new();
  ck_assert_ptr_nonnull(m);
  ck_assert_ptr_nonnull(cg_model_begin(m, STREAM, 0, c->capture_mode, T1, false, 1, NULL));
  uint64_t caller = c->same_thread ? T1 : T2;
  /* the caller's mode: the shim keeps it per thread (live_captures.c) */
  cg_capture_mode tm = c->swap ? CG_MODE_RELAXED : CG_MODE_GLOBAL;
  cg_capture *out[4] = {0};
  size_t n = cg_model_prohibitors(m, caller, tm, out, 4);
  bool direct = cg_capture_prohibits(cg_model_find(m, STREAM), caller, tm);
  ck_assert_msg(direct == (n > 0), "%s: cg_capture_prohibits disagrees with cg_model_prohibitors",
                c->name);
  if (n > 0) ck_assert_ptr_eq(out[0], cg_model_find(m, STREAM));
  cg_model_free(m);
  *n_out = n;
  return n > 0;
}

/* How a driver of the given version answers a call the rule decides. */
static outcome driver_answer(const row *r, bool prohibited, int driver_version) {
  if (!prohibited) return OK;
  if (r->is_load && driver_version >= 12030) return OK; /* 12.3 lifted the load restriction */
  return REFUSED;
}

START_TEST(test_ground_truth_module_rows) {
  for (size_t ci = 0; ci < N_COLUMNS; ci++) {
    size_t n;
    bool prohibited = column_prohibited(&columns[ci], &n);
    ck_assert_uint_le(n, 1);
    for (size_t ri = 0; ri < N_MODULE_ROWS; ri++) {
      const row *r = &module_rows[ri];
      /* the model, with the driver-generation rule, reproduces the 13.0 measurement */
      ck_assert_msg(driver_answer(r, prohibited, 13000) == r->on_13_0[ci],
                    "%s / %s: model says %s, table says %s", r->call, columns[ci].name,
                    prohibited ? "prohibited" : "not prohibited",
                    r->on_13_0[ci] == REFUSED ? "900+inv" : "ok");
      if (r->is_load) {
        /* 13.0 allowed every load, prohibited or not ... */
        ck_assert_msg(r->on_13_0[ci] == OK, "%s / %s", r->call, columns[ci].name);
        /* ... and "prohibited" is exactly where the unload (the call every
         * driver still refuses under prohibition) was refused: the condition
         * under which a pre-12.3 driver refuses the load. */
        bool unload_refused = module_rows[UNLOAD_ROW].on_13_0[ci] == REFUSED;
        ck_assert_msg(prohibited == unload_refused, "%s / %s", r->call, columns[ci].name);
        ck_assert_msg((driver_answer(r, prohibited, 12020) == REFUSED) == unload_refused,
                      "%s / %s on 12.2", r->call, columns[ci].name);
      }
    }
  }
}
END_TEST

START_TEST(test_ground_truth_other_rule_rows) {
  for (size_t ci = 0; ci < N_COLUMNS; ci++) {
    size_t n;
    bool prohibited = column_prohibited(&columns[ci], &n);
    for (size_t ri = 0; ri < N_RULE_ROWS; ri++)
      ck_assert_msg((rule_rows[ri].on_13_0[ci] == REFUSED) == prohibited, "%s / %s",
                    rule_rows[ri].call, columns[ci].name);
  }
}
END_TEST

/* ---- the rule, every combination ---------------------------------------- */

/* The documented rule for each (own capture?, capture mode, thread mode). */
static const struct {
  bool own;
  cg_capture_mode capture_mode, thread_mode;
  bool prohibited;
} rule_cases[] = {
    {true, CG_MODE_GLOBAL, CG_MODE_GLOBAL, true},
    {true, CG_MODE_THREAD_LOCAL, CG_MODE_GLOBAL, true},
    {true, CG_MODE_RELAXED, CG_MODE_GLOBAL, false},
    {false, CG_MODE_GLOBAL, CG_MODE_GLOBAL, true},
    {false, CG_MODE_THREAD_LOCAL, CG_MODE_GLOBAL, false},
    {false, CG_MODE_RELAXED, CG_MODE_GLOBAL, false},
    {true, CG_MODE_GLOBAL, CG_MODE_THREAD_LOCAL, true},
    {true, CG_MODE_THREAD_LOCAL, CG_MODE_THREAD_LOCAL, true},
    {true, CG_MODE_RELAXED, CG_MODE_THREAD_LOCAL, false},
    {false, CG_MODE_GLOBAL, CG_MODE_THREAD_LOCAL, false},
    {false, CG_MODE_THREAD_LOCAL, CG_MODE_THREAD_LOCAL, false},
    {false, CG_MODE_RELAXED, CG_MODE_THREAD_LOCAL, false},
    {true, CG_MODE_GLOBAL, CG_MODE_RELAXED, false},
    {true, CG_MODE_THREAD_LOCAL, CG_MODE_RELAXED, false},
    {true, CG_MODE_RELAXED, CG_MODE_RELAXED, false},
    {false, CG_MODE_GLOBAL, CG_MODE_RELAXED, false},
    {false, CG_MODE_THREAD_LOCAL, CG_MODE_RELAXED, false},
    {false, CG_MODE_RELAXED, CG_MODE_RELAXED, false},
};

START_TEST(test_rule_every_combination) {
  for (size_t i = 0; i < sizeof rule_cases / sizeof rule_cases[0]; i++) {
    cg_capture c = {.id = 1, .stream = 5, .tid = T1, .mode = rule_cases[i].capture_mode};
    uint64_t caller = rule_cases[i].own ? T1 : T2;
    for (int st = CG_CAPTURE_ACTIVE; st <= CG_CAPTURE_INVALIDATED; st++) {
      c.status = (cg_capture_status)st; /* invalidated captures still prohibit */
      ck_assert_msg(cg_capture_prohibits(&c, caller, rule_cases[i].thread_mode) ==
                        rule_cases[i].prohibited,
                    "case %zu status %d", i, st);
    }
    /* closed captures prohibit nothing */
    c.status = CG_CAPTURE_ENDED;
    ck_assert(!cg_capture_prohibits(&c, caller, rule_cases[i].thread_mode));
    c.status = CG_CAPTURE_FAILED;
    ck_assert(!cg_capture_prohibits(&c, caller, rule_cases[i].thread_mode));
  }
  ck_assert(!cg_capture_prohibits(NULL, T1, CG_MODE_GLOBAL));
}
END_TEST

/* ---- model bookkeeping --------------------------------------------------- */

START_TEST(test_several_threads_and_captures) {
  cg_model *m = cg_model_new();
  /* stream keys deliberately descending, so "oldest first" cannot come from key order */
  cg_capture *a = cg_model_begin(m, 0x300, 7, CG_MODE_GLOBAL, 1, false, 10, NULL);
  cg_capture *b = cg_model_begin(m, 0x200, 7, CG_MODE_THREAD_LOCAL, 2, false, 20, NULL);
  cg_capture *c = cg_model_begin(m, 0x100, 7, CG_MODE_RELAXED, 3, false, 30, NULL);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_nonnull(c);
  ck_assert_uint_eq(cg_model_open_count(m), 3);

  cg_capture *out[8];
  /* thread 1, global: its own global capture only */
  ck_assert_uint_eq(cg_model_prohibitors(m, 1, CG_MODE_GLOBAL, out, 8), 1);
  ck_assert_ptr_eq(out[0], a);
  /* thread 2, global: thread 1's global capture, then its own thread-local one, oldest first */
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, out, 8), 2);
  ck_assert_ptr_eq(out[0], a);
  ck_assert_ptr_eq(out[1], b);
  /* thread 2, thread-local: only its own */
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_THREAD_LOCAL, out, 8), 1);
  ck_assert_ptr_eq(out[0], b);
  /* thread 3, global: its own relaxed capture does not count, thread 1's does */
  ck_assert_uint_eq(cg_model_prohibitors(m, 3, CG_MODE_GLOBAL, out, 8), 1);
  ck_assert_ptr_eq(out[0], a);
  /* an uninvolved thread: only the global capture */
  ck_assert_uint_eq(cg_model_prohibitors(m, 4, CG_MODE_GLOBAL, out, 8), 1);
  ck_assert_uint_eq(cg_model_prohibitors(m, 4, CG_MODE_THREAD_LOCAL, out, 8), 0);
  ck_assert_uint_eq(cg_model_prohibitors(m, 1, CG_MODE_RELAXED, out, 8), 0);

  /* a fourth, global capture by thread 3 comes last in the list */
  cg_capture *d = cg_model_begin(m, 0x050, 7, CG_MODE_GLOBAL, 3, false, 40, NULL);
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, out, 8), 3);
  ck_assert_ptr_eq(out[0], a);
  ck_assert_ptr_eq(out[1], b);
  ck_assert_ptr_eq(out[2], d);

  /* cap: the total is returned, but only cap pointers are written */
  cg_capture *sentinel = (cg_capture *)&out;
  for (int i = 0; i < 8; i++) out[i] = sentinel;
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, out, 1), 3);
  ck_assert_ptr_eq(out[0], a);
  ck_assert_ptr_eq(out[1], sentinel);
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, NULL, 0), 3);

  /* ending the oldest: the rest keep their order */
  ck_assert_int_eq(cg_model_end(m, 0x300, true, 50, NULL), 0);
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, out, 8), 2);
  ck_assert_ptr_eq(out[0], b);
  ck_assert_ptr_eq(out[1], d);
  cg_model_free(m);
}
END_TEST

START_TEST(test_end_removes) {
  cg_model *m = cg_model_new();
  int tag;
  cg_capture *c = cg_model_begin(m, 0x10, 0xc0, CG_MODE_GLOBAL, 9, false, 100, &tag);
  ck_assert_ptr_nonnull(c);
  c->events = 3;
  ck_assert_ptr_eq(cg_model_find(m, 0x10), c);
  cg_capture out;
  ck_assert_int_eq(cg_model_end(m, 0x10, true, 250, &out), 0);
  ck_assert_uint_eq(cg_model_open_count(m), 0);
  ck_assert_ptr_null(cg_model_find(m, 0x10));
  ck_assert_int_eq(out.status, CG_CAPTURE_ENDED);
  ck_assert_uint_eq(out.id, 1);
  ck_assert_uint_eq(out.stream, 0x10);
  ck_assert_uint_eq(out.context, 0xc0);
  ck_assert_uint_eq(out.tid, 9);
  ck_assert_int_eq(out.mode, CG_MODE_GLOBAL);
  ck_assert_uint_eq(out.begin_ns, 100);
  ck_assert_uint_eq(out.end_ns, 250);
  ck_assert_uint_eq(out.events, 3);
  ck_assert_ptr_eq(out.user, &tag);
  ck_assert(!out.into_graph);
  /* ended: no longer prohibits, and a second end finds nothing */
  ck_assert_uint_eq(cg_model_prohibitors(m, 9, CG_MODE_GLOBAL, NULL, 0), 0);
  ck_assert_int_eq(cg_model_end(m, 0x10, true, 300, &out), -1);
  ck_assert_int_eq(cg_model_end(m, 0x99, true, 300, NULL), -1);
  /* the stream can capture again */
  ck_assert_ptr_nonnull(cg_model_begin(m, 0x10, 0xc0, CG_MODE_GLOBAL, 9, false, 400, NULL));
  cg_model_free(m);
}
END_TEST

START_TEST(test_failed_end) {
  cg_model *m = cg_model_new();
  cg_model_begin(m, 0x10, 0, CG_MODE_GLOBAL, 9, false, 1, NULL);
  cg_model_find(m, 0x10)->status = CG_CAPTURE_INVALIDATED; /* a call broke it */
  cg_capture out;
  ck_assert_int_eq(cg_model_end(m, 0x10, false, 2, &out), 0);
  ck_assert_int_eq(out.status, CG_CAPTURE_FAILED);
  ck_assert_uint_eq(out.end_ns, 2);
  ck_assert_uint_eq(cg_model_open_count(m), 0);
  cg_model_free(m);
}
END_TEST

START_TEST(test_into_graph) {
  cg_model *m = cg_model_new();
  cg_capture *c = cg_model_begin(m, 0x10, 0, CG_MODE_THREAD_LOCAL, 9, true, 1, NULL);
  ck_assert(c->into_graph);
  ck_assert(!cg_model_begin(m, 0x20, 0, CG_MODE_GLOBAL, 9, false, 1, NULL)->into_graph);
  /* captures into a graph prohibit by the same rule */
  ck_assert_uint_eq(cg_model_prohibitors(m, 9, CG_MODE_THREAD_LOCAL, NULL, 0), 2);
  cg_capture out;
  ck_assert_int_eq(cg_model_end(m, 0x10, true, 2, &out), 0);
  ck_assert(out.into_graph);
  cg_model_free(m);
}
END_TEST

START_TEST(test_double_begin_rejected) {
  cg_model *m = cg_model_new();
  cg_capture *c = cg_model_begin(m, 0x10, 0, CG_MODE_GLOBAL, 9, false, 1, NULL);
  ck_assert_ptr_nonnull(c);
  ck_assert_ptr_null(cg_model_begin(m, 0x10, 0, CG_MODE_RELAXED, 8, true, 2, NULL));
  ck_assert_uint_eq(cg_model_open_count(m), 1);
  ck_assert_uint_eq(cg_model_begun_total(m), 1);
  /* the open capture is untouched */
  ck_assert_ptr_eq(cg_model_find(m, 0x10), c);
  ck_assert_int_eq(c->mode, CG_MODE_GLOBAL);
  ck_assert_uint_eq(c->tid, 9);
  ck_assert_uint_eq(c->begin_ns, 1);
  /* the rejected begin consumed no id */
  ck_assert_uint_eq(cg_model_begin(m, 0x20, 0, CG_MODE_GLOBAL, 9, false, 3, NULL)->id, 2);
  cg_model_free(m);
}
END_TEST

START_TEST(test_invalid_captures_prohibit_until_ended) {
  cg_model *m = cg_model_new();
  cg_capture *a = cg_model_begin(m, 0xa, 0, CG_MODE_GLOBAL, 1, false, 1, NULL);
  cg_capture *b = cg_model_begin(m, 0xb, 0, CG_MODE_THREAD_LOCAL, 2, false, 2, NULL);
  cg_capture *c = cg_model_begin(m, 0xc, 0, CG_MODE_THREAD_LOCAL, 3, false, 3, NULL);
  cg_capture *d = cg_model_begin(m, 0xd, 0, CG_MODE_RELAXED, 2, false, 4, NULL);
  /* thread 2 in global mode is prohibited by a (other's global) and b (its own) */
  cg_capture *p[4] = {0};
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, p, 4), 2);
  ck_assert(p[0] == a && p[1] == b);
  /* invalidated (the shim marks them: model/break_rules.c), they still prohibit until ended */
  a->status = b->status = CG_CAPTURE_INVALIDATED;
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, NULL, 0), 2);
  ck_assert_uint_eq(cg_model_prohibitors(m, 5, CG_MODE_GLOBAL, NULL, 0), 1);
  /* a relaxed thread is prohibited by nothing; thread 3 thread-local by its own c only */
  ck_assert_uint_eq(cg_model_prohibitors(m, 3, CG_MODE_RELAXED, NULL, 0), 0);
  ck_assert_uint_eq(cg_model_prohibitors(m, 3, CG_MODE_THREAD_LOCAL, p, 4), 1);
  ck_assert(p[0] == c);
  ck_assert_int_eq(d->status, CG_CAPTURE_ACTIVE);
  /* once ended, an invalidated capture stops prohibiting */
  ck_assert_int_eq(cg_model_end(m, 0xa, false, 9, NULL), 0);
  ck_assert_uint_eq(cg_model_prohibitors(m, 5, CG_MODE_GLOBAL, NULL, 0), 0);
  cg_model_free(m);
}
END_TEST

START_TEST(test_count_event) {
  cg_model *m = cg_model_new();
  cg_capture *a = cg_model_begin(m, 0xa, 0, CG_MODE_GLOBAL, 1, false, 1, NULL);
  cg_capture *b = cg_model_begin(m, 0xb, 0, CG_MODE_THREAD_LOCAL, 2, false, 2, NULL);
  ck_assert_uint_eq(cg_model_count_event(m, 2, CG_MODE_GLOBAL), 2);
  ck_assert_uint_eq(cg_model_count_event(m, 1, CG_MODE_GLOBAL), 1);
  ck_assert_uint_eq(cg_model_count_event(m, 1, CG_MODE_RELAXED), 0);
  ck_assert_uint_eq(a->events, 2);
  ck_assert_uint_eq(b->events, 1);
  cg_capture out;
  cg_model_end(m, 0xa, true, 3, &out);
  ck_assert_uint_eq(out.events, 2);
  cg_model_free(m);
}
END_TEST

START_TEST(test_open_count_and_ids) {
  cg_model *m = cg_model_new();
  ck_assert_uint_eq(cg_model_open_count(m), 0);
  ck_assert_uint_eq(cg_model_begun_total(m), 0);
  for (uint64_t i = 1; i <= 5; i++) {
    cg_capture *c = cg_model_begin(m, 0x1000 + i, 0, CG_MODE_GLOBAL, 1, false, i, NULL);
    ck_assert_uint_eq(c->id, i);
    ck_assert_uint_eq(cg_model_open_count(m), i);
  }
  cg_model_end(m, 0x1002, true, 9, NULL);
  cg_model_end(m, 0x1004, false, 9, NULL);
  ck_assert_uint_eq(cg_model_open_count(m), 3);
  ck_assert_uint_eq(cg_model_begun_total(m), 5);
  /* ids keep counting after ends; a reused stream gets a new id */
  ck_assert_uint_eq(cg_model_begin(m, 0x1002, 0, CG_MODE_GLOBAL, 1, false, 10, NULL)->id, 6);
  ck_assert_uint_eq(cg_model_begun_total(m), 6);
  ck_assert_uint_eq(cg_model_find(m, 0x1003)->id, 3);
  /* separate models count separately */
  cg_model *m2 = cg_model_new();
  ck_assert_uint_eq(cg_model_begin(m2, 0x1, 0, CG_MODE_GLOBAL, 1, false, 1, NULL)->id, 1);
  cg_model_free(m2);
  cg_model_free(m);
}
END_TEST

START_TEST(test_open_captures_bounded) {
  /* a process that never ends its captures cannot make the model grow forever */
  cg_model *m = cg_model_new();
  size_t accepted = 0;
  for (uint64_t s = 1; s <= 100000; s++)
    if (cg_model_begin(m, s, 0, CG_MODE_GLOBAL, 1, false, s, NULL)) accepted++;
  ck_assert_uint_ge(accepted, 1000);
  ck_assert_uint_lt(accepted, 100000);
  ck_assert_uint_eq(cg_model_open_count(m), accepted);
  /* after an end there is room again */
  ck_assert_int_eq(cg_model_end(m, 1, true, 1, NULL), 0);
  ck_assert_ptr_nonnull(cg_model_begin(m, 1, 0, CG_MODE_GLOBAL, 1, false, 1, NULL));
  cg_model_free(m);
}
END_TEST

/* ---- events recorded into captures, driver ids, every open capture ------- */

START_TEST(test_events_follow_their_capture) {
  cg_model *m = cg_model_new();
  cg_capture *a = cg_model_begin(m, 0x100, 0, CG_MODE_GLOBAL, 1, false, 0, NULL);
  cg_capture *b = cg_model_begin(m, 0x200, 0, CG_MODE_RELAXED, 2, false, 0, NULL);
  uint64_t a_id = a->id;
  ck_assert_ptr_null(cg_model_event_capture(m, 7)); /* never recorded */
  cg_model_event_recorded(m, 7, a);
  cg_model_event_recorded(m, 8, b);
  ck_assert_ptr_eq(cg_model_event_capture(m, 7), a);
  ck_assert_ptr_eq(cg_model_event_capture(m, 8), b);
  /* recorded again, outside any capture: the driver's business again */
  cg_model_event_recorded(m, 8, NULL);
  ck_assert_ptr_null(cg_model_event_capture(m, 8));
  ck_assert_uint_eq(cg_model_tracked_events(m), 1);
  /* recorded again into another capture: follows it */
  cg_model_event_recorded(m, 7, b);
  ck_assert_ptr_eq(cg_model_event_capture(m, 7), b);
  cg_model_event_recorded(m, 7, a);
  /* the capture ends: a new capture on the same stream is not the event's */
  ck_assert_int_eq(cg_model_end(m, 0x100, true, 1, NULL), 0);
  cg_capture *again = cg_model_begin(m, 0x100, 0, CG_MODE_GLOBAL, 1, false, 2, NULL);
  ck_assert_uint_ne(again->id, a_id);
  ck_assert_ptr_null(cg_model_event_capture(m, 7));
  /* forgetting a capture's events leaves the others' */
  cg_model_event_recorded(m, 9, again);
  cg_model_event_recorded(m, 10, b);
  cg_model_forget_events_of(m, again->id);
  ck_assert_ptr_null(cg_model_event_capture(m, 9));
  ck_assert_ptr_eq(cg_model_event_capture(m, 10), b);
  /* a destroyed event is forgotten: its handle may come back as a new event */
  ck_assert(cg_model_event_tracked(m, 10));
  cg_model_event_forget(m, 10);
  ck_assert(!cg_model_event_tracked(m, 10));
  ck_assert_ptr_null(cg_model_event_capture(m, 10));
  cg_model_event_forget(m, 10); /* twice, or never tracked: nothing */
  cg_model_free(m);
}
END_TEST

START_TEST(test_tracked_events_bounded) {
  cg_model *m = cg_model_new();
  cg_capture *a = cg_model_begin(m, 0x100, 0, CG_MODE_GLOBAL, 1, false, 0, NULL);
  for (uint64_t e = 1; e <= 70000; e++)
    cg_model_event_recorded(m, e, a);
  ck_assert_uint_eq(cg_model_tracked_events(m), 65536);
  ck_assert_ptr_eq(cg_model_event_capture(m, 65536), a);
  ck_assert_ptr_null(cg_model_event_capture(m, 65537)); /* past the bound: not tracked, never wrong */
  cg_model_free(m);
}
END_TEST

START_TEST(test_driver_ids_and_open_captures) {
  cg_model *m = cg_model_new();
  cg_capture *a = cg_model_begin(m, 0x100, 0, CG_MODE_GLOBAL, 1, false, 0, NULL);
  cg_capture *b = cg_model_begin(m, 0x200, 0, CG_MODE_RELAXED, 2, false, 0, NULL);
  a->driver_id = 41;
  b->driver_id = 42;
  ck_assert_ptr_eq(cg_model_find_driver_id(m, 42), b);
  ck_assert_ptr_null(cg_model_find_driver_id(m, 0)); /* unknown ids never match */
  ck_assert_ptr_null(cg_model_find_driver_id(m, 43));
  cg_capture *open[4];
  /* a relaxed capture prohibits nobody, yet it is open: cuCtxSynchronize counts it */
  ck_assert_uint_eq(cg_model_open_captures(m, open, 1), 2);
  ck_assert_ptr_eq(open[0], a); /* oldest first */
  ck_assert_uint_eq(cg_model_open_captures(m, open, 4), 2);
  ck_assert_ptr_eq(open[1], b);
  cg_model_end(m, 0x100, true, 1, NULL);
  ck_assert_ptr_null(cg_model_find_driver_id(m, 41));
  ck_assert_uint_eq(cg_model_open_captures(NULL, open, 4), 0);
  cg_model_free(m);
}
END_TEST

START_TEST(test_null_and_names) {
  ck_assert_ptr_null(cg_model_begin(NULL, 1, 0, CG_MODE_GLOBAL, 1, false, 1, NULL));
  ck_assert_int_eq(cg_model_end(NULL, 1, true, 1, NULL), -1);
  ck_assert_ptr_null(cg_model_find(NULL, 1));
  ck_assert_uint_eq(cg_model_open_count(NULL), 0);
  ck_assert_uint_eq(cg_model_prohibitors(NULL, 1, CG_MODE_GLOBAL, NULL, 0), 0);
  cg_model_free(NULL);
  ck_assert_str_eq(cg_capture_mode_name(CG_MODE_GLOBAL), "global");
  ck_assert_str_eq(cg_capture_mode_name(CG_MODE_THREAD_LOCAL), "thread-local");
  ck_assert_str_eq(cg_capture_mode_name(CG_MODE_RELAXED), "relaxed");
  ck_assert_str_eq(cg_capture_mode_name((cg_capture_mode)42), "unknown");
  ck_assert_str_eq(cg_capture_status_name(CG_CAPTURE_ACTIVE), "active");
  ck_assert_str_eq(cg_capture_status_name(CG_CAPTURE_INVALIDATED), "invalidated");
  ck_assert_str_eq(cg_capture_status_name(CG_CAPTURE_ENDED), "ended");
  ck_assert_str_eq(cg_capture_status_name(CG_CAPTURE_FAILED), "failed");
  ck_assert_str_eq(cg_capture_status_name((cg_capture_status)42), "unknown");
}
END_TEST

/* ---- shards: oldest first across them, one lock a shard ------------------ */

/* Streams spread over the shards (a multiply of the index): the walks that
 * merge the shards must still give every capture oldest first. */
static uint64_t spread_stream(uint64_t i) { return 0x7f0000001000ull + i * 0x2a0; }

static void assert_oldest_first(cg_model *m, size_t expect) {
  cg_capture *all[300];
  size_t n = cg_model_open_captures(m, all, 300);
  ck_assert_uint_eq(n, expect);
  for (size_t i = 1; i < n; i++)
    ck_assert_uint_lt(all[i - 1]->id, all[i]->id);
  cg_capture *p[16];
  ck_assert_uint_eq(cg_model_prohibitors(m, 2, CG_MODE_GLOBAL, p, 16), expect);
  for (size_t i = 0; i < 16 && i < expect; i++)
    ck_assert_uint_eq(p[i]->id, all[i]->id);
}

START_TEST(test_oldest_first_across_shards) {
  cg_model *m = cg_model_new();
  bool used[CG_MODEL_SHARDS] = {false};
  unsigned shards = 0;
  for (uint64_t i = 0; i < 200; i++) {
    ck_assert_ptr_nonnull(cg_model_begin(m, spread_stream(i), 0, CG_MODE_GLOBAL, 1, false, i, NULL));
    unsigned k = cg_model_shard(spread_stream(i));
    ck_assert_uint_lt(k, CG_MODEL_SHARDS);
    shards += !used[k];
    used[k] = true;
  }
  ck_assert_uint_ge(shards, CG_MODEL_SHARDS / 2); /* the walks do cross shards */
  assert_oldest_first(m, 200);
  /* ends here and there, then new captures on the streams they freed */
  for (uint64_t i = 0; i < 200; i += 3)
    ck_assert_int_eq(cg_model_end(m, spread_stream(i), true, 1, NULL), 0);
  assert_oldest_first(m, 133);
  for (uint64_t i = 0; i < 200; i += 3)
    ck_assert_ptr_nonnull(cg_model_begin(m, spread_stream(i), 0, CG_MODE_GLOBAL, 1, false, i, NULL));
  assert_oldest_first(m, 200);
  ck_assert_uint_eq(cg_model_begun_total(m), 267);
  ck_assert_uint_eq(cg_model_count_event(m, 2, CG_MODE_GLOBAL), 200);
  cg_model_free(m);
}
END_TEST

/* Threads capturing on streams of their own at once, each holding only its
 * stream's shard's lock (the contract in capture_model.h): no begin or end
 * is lost, no id given twice. */
enum { RACERS = 16, RACER_CAPTURES = 4000 };
static cg_model *raced;
static pthread_mutex_t shard_locks[CG_MODEL_SHARDS];
static uint64_t racer_ids[RACERS][RACER_CAPTURES];

static void *racer(void *arg) {
  uintptr_t me = (uintptr_t)arg;
  uint64_t stream = spread_stream(1000 + me);
  pthread_mutex_t *lock = &shard_locks[cg_model_shard(stream)];
  for (int i = 0; i < RACER_CAPTURES; i++) {
    pthread_mutex_lock(lock);
    cg_capture *c = cg_model_begin(raced, stream, 0, CG_MODE_GLOBAL, me, false, 1, NULL);
    racer_ids[me][i] = c ? c->id : 0;
    pthread_mutex_unlock(lock);
    pthread_mutex_lock(lock);
    int ended = cg_model_end(raced, stream, true, 2, NULL);
    pthread_mutex_unlock(lock);
    if (ended != 0)
      racer_ids[me][i] = 0;
  }
  return NULL;
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

START_TEST(test_shards_locked_apart) {
  raced = cg_model_new();
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++)
    pthread_mutex_init(&shard_locks[i], NULL);
  pthread_t t[RACERS];
  for (uintptr_t i = 0; i < RACERS; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, racer, (void *)i), 0);
  for (int i = 0; i < RACERS; i++)
    pthread_join(t[i], NULL);
  ck_assert_uint_eq(cg_model_open_count(raced), 0);
  ck_assert_uint_eq(cg_model_begun_total(raced), (uint64_t)RACERS * RACER_CAPTURES);
  uint64_t *ids = &racer_ids[0][0];
  size_t n = (size_t)RACERS * RACER_CAPTURES;
  qsort(ids, n, sizeof *ids, by_value);
  for (size_t i = 0; i < n; i++)
    ck_assert_uint_eq(ids[i], i + 1); /* 1..n, each once */
  cg_model_free(raced);
}
END_TEST

int main(void) {
  Suite *s = suite_create("capture_model");
  TCase *tc = tcase_create("ground_truth");
  tcase_add_test(tc, test_ground_truth_module_rows);
  tcase_add_test(tc, test_ground_truth_other_rule_rows);
  tcase_add_test(tc, test_rule_every_combination);
  suite_add_tcase(s, tc);
  tc = tcase_create("model");
  tcase_add_test(tc, test_several_threads_and_captures);
  tcase_add_test(tc, test_end_removes);
  tcase_add_test(tc, test_failed_end);
  tcase_add_test(tc, test_into_graph);
  tcase_add_test(tc, test_double_begin_rejected);
  tcase_add_test(tc, test_invalid_captures_prohibit_until_ended);
  tcase_add_test(tc, test_count_event);
  tcase_add_test(tc, test_open_count_and_ids);
  tcase_add_test(tc, test_open_captures_bounded);
  tcase_add_test(tc, test_events_follow_their_capture);
  tcase_add_test(tc, test_tracked_events_bounded);
  tcase_add_test(tc, test_driver_ids_and_open_captures);
  tcase_add_test(tc, test_null_and_names);
  tcase_add_test(tc, test_oldest_first_across_shards);
  tcase_add_test(tc, test_shards_locked_apart);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
