/* fakecuda: every copy and memset entry point against the third matrix's legacy-stream
 * rule (driver-semantics.md), cell by cell, in the four columns of test_third.c:
 * - a synchronous copy or memset (v2 and the 32-bit v1 forms), and an asynchronous one
 *   on the legacy stream (NULL, or CU_STREAM_LEGACY for a _ptsz form): 906 and the
 *   capture invalidated while a blocking stream captures, every mode; run at once,
 *   outside the graph, while only a non-blocking one does;
 * - an asynchronous one on the capturing stream: captured (a memcpy or memset node, not
 *   run now), every column;
 * - a _ptsz form on stream 0 (the per-thread stream): neither refused nor captured.
 * Each row's work leaves 0x11 bytes where it writes (device memory, host memory or an
 * array), so a cell also says whether it ran now. This file calls the exported names
 * themselves (cuda.h's internal prototypes: cuMemcpyHtoD is the v1 entry point here). */
#define __CUDA_API_VERSION_INTERNAL 1
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "copy_calls.h"
#include "third_columns.h"

/* Where a row's call is made: the legacy stream, the capturing stream, stream 0 of a
 * _ptsz form (the per-thread stream), and the legacy stream from a second thread. */
enum place { LEGACY, CAPTURING, PER_THREAD, LEGACY_OTHER, NPLACES };
static const char *const place_names[] = { "legacy stream", "capturing stream", "stream 0 of _ptsz",
                                           "legacy stream, another thread" };

static const unsigned char zero[N];

static void setup_cell(struct cell *c, unsigned flags, CUmodule *m)
{
  *m = test_load_module("kernels_sm90.cubin");
  CU_OK(copy_cell_setup(c, test_ctx, flags));
  CU_OK(cuModuleGetFunction(&c->add_one, *m, "fake_add_one"));
}

static void cleanup_cell(struct cell *c, CUmodule m)
{
  CU_OK(cuArrayDestroy(c->arr));
  CU_OK(cuArrayDestroy(c->arr_src));
  CU_OK(cuMemFree(c->lo));
  CU_OK(cuMemFree(c->lo_src));
  CU_OK(cuMemFree_v2(c->mem));
  CU_OK(cuMemFree_v2(c->src));
  CU_OK(cuStreamDestroy_v2(c->stream));
  CU_OK(cuModuleUnload(m));
}

/* Whether the row's work ran: 0x11 where it writes, or still zero. */
static int ran(struct cell *c, int where, const char *what)
{
  unsigned char back[N];
  switch (where) {
  case TO_MEM: CU_OK(cuMemcpyDtoH_v2(back, c->mem, N)); break;
  case TO_LO: CU_OK(cuMemcpyDtoH_v2(back, (CUdeviceptr)c->lo, N)); break;
  case TO_ARR: CU_OK(cuMemcpyAtoH_v2(back, c->arr, 0, N)); break;
  default: memcpy(back, c->host_dst, N);
  }
  unsigned char full[N];
  memset(full, 0x11, N);
  ck_assert_msg(memcmp(back, zero, N) == 0 || memcmp(back, full, N) == 0,
                "[%s] memory neither untouched nor written whole", what);
  return back[0] == 0x11;
}

struct caller { const struct row *r; struct cell *c; CUstream s; CUresult rc; };
static void *call_thread(void *arg)
{
  struct caller *k = arg;
  k->rc = cuCtxSetCurrent(test_ctx);
  if (k->rc == CUDA_SUCCESS)
    k->rc = k->r->call(k->c, k->s);
  return NULL;
}

START_TEST(test_copy_cell)
{
  const int place = _i % NPLACES, col_i = (_i / NPLACES) % NCOLS;
  const struct row *r = &rows[_i / NPLACES / NCOLS];
  const struct column *col = &columns[col_i];
  /* Synchronous calls have no stream: only the legacy cells; non-_ptsz calls have no
   * per-thread stream 0. */
  if ((r->how == 'S' && (place == CAPTURING || place == PER_THREAD)) || (r->how == 'A' && place == PER_THREAD))
    return;
  char what[256];
  snprintf(what, sizeof(what), "%s on the %s | %s", r->name, place_names[place], col->name);
  struct cell c;
  CUmodule m;
  setup_cell(&c, col->stream_flags, &m);
  CU_OK(cuStreamBeginCapture_v2(c.stream, col->mode));
  CU_OK(cuLaunchKernel(c.add_one, 1, 1, 1, 32, 1, 1, 0, c.stream, NULL, NULL));

  CUstream s = place == CAPTURING ? c.stream
               : place == PER_THREAD ? NULL
               : r->how == 'X' ? CU_STREAM_LEGACY : NULL;
  struct caller k = { r, &c, s, CUDA_ERROR_UNKNOWN };
  if (place == LEGACY_OTHER) {
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, call_thread, &k), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
  } else {
    call_thread(&k);
  }
  const int legacy = place == LEGACY || place == LEGACY_OTHER;
  const int refused = legacy && col->stream_flags == 0;   /* ground truth: 906 + inv */
  const int captured = place == CAPTURING;
  ck_assert_msg(k.rc == (refused ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS),
                "[%s] call returned %d, want %s", what, (int)k.rc, refused ? "906" : "0");
  CUstreamCaptureStatus st;
  CU_OK(cuStreamIsCapturing(c.stream, &st));
  ck_assert_msg(st == (refused ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE),
                "[%s] capture status %d", what, (int)st);
  CUgraph g = NULL;
  CUresult end = cuStreamEndCapture(c.stream, &g);
  ck_assert_msg(end == (refused ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS), "[%s] end %d", what,
                (int)end);
  if (g != NULL) {
    char names[64];
    test_kernel_names(g, names, sizeof(names));
    ck_assert_msg(strcmp(names, "fake_add_one") == 0, "[%s] graph kernels %s", what, names);
    ck_assert_msg(test_count_nodes(g, r->node) == (size_t)captured, "[%s] %zu %s nodes, want %d", what,
                  test_count_nodes(g, r->node), r->node == CP ? "memcpy" : "memset", captured);
    CU_OK(cuGraphDestroy(g));
  }
  /* Refused: nothing done; captured: not done now; otherwise done now (outside the
   * graph, when it was the legacy stream). */
  ck_assert_msg(ran(&c, r->where, what) == (!refused && !captured), "[%s] the work %s", what,
                refused || captured ? "ran now" : "did not run now");
  cleanup_cell(&c, m);
}
END_TEST

/* Drivers 12.9 and later log each refusal on the offending thread: the cause, then
 * "Returning 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) from <the exported name>". */
static struct { char last[256], cause[256]; int n; } logged;
static void CUDA_CB on_log(void *data, CUlogLevel level, char *message, size_t length)
{
  (void)data, (void)level;
  snprintf(logged.n ? logged.last : logged.cause, sizeof(logged.last), "%.*s", (int)length, message);
  logged.n++;
}

START_TEST(test_copy_log)
{
  const struct row *r = &rows[_i];
  CUlogsCallbackHandle h = NULL;
  if (test_driver_version() < 12090) {
    CU_EQ(cuLogsRegisterCallback(on_log, NULL, &h), CUDA_ERROR_NOT_SUPPORTED);
    return;
  }
  struct cell c;
  CUmodule m;
  setup_cell(&c, 0, &m);
  CU_OK(cuLogsRegisterCallback(on_log, NULL, &h));
  CU_OK(cuStreamBeginCapture_v2(c.stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  memset(&logged, 0, sizeof(logged));
  CU_EQ(r->call(&c, r->how == 'X' ? CU_STREAM_LEGACY : NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  char want[256], sym[64];
  snprintf(sym, sizeof(sym), "%s", r->name);
  sym[strcspn(sym, " ")] = '\0';
  snprintf(want, sizeof(want), "Returning 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) from %s", sym);
  ck_assert_int_eq(logged.n, 2);
  ck_assert_str_eq(logged.cause, "Call cannot be made against CU_STREAM_LEGACY while a blocking stream in the "
                                 "same context is capturing");
  ck_assert_str_eq(logged.last, want);
  CUgraph g;
  CU_EQ(cuStreamEndCapture(c.stream, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CU_OK(cuLogsUnregisterCallback(h));
  cleanup_cell(&c, m);
}
END_TEST

Suite *suite_copies(void)
{
  Suite *s = suite_create("copies and memsets");
  TCase *tc = tcase_create("legacy stream, capturing stream, per-thread stream");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_loop_test(tc, test_copy_cell, 0, NROWS * NCOLS * NPLACES);
  tcase_add_loop_test(tc, test_copy_log, 0, NROWS);
  suite_add_tcase(s, tc);
  return s;
}
