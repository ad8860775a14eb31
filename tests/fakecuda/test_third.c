/* fakecuda: the third matrix of docs/driver-semantics.md (the legacy
 * stream, forks and joins, waits on events, graph launch into a capture) and the driver's
 * log callback, cell by cell. Each cell: a fresh capture holding one kernel, on a blocking
 * stream (flags 0) or a non-blocking one; the row's call made mid-capture by the capturing
 * thread or a second one; then the call's result, the capture's status, and the end
 * (a graph with the right nodes, or 901 and none). Run with FAKECUDA_DRIVER_VERSION=12020
 * and =13000 (the log callback exists from 12090). */
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "third_columns.h"

struct cell {
  CUstream stream;
  CUfunction add_one, scale;
  CUdeviceptr mem;           /* allocated before the capture, zeroed */
  unsigned char host[64];    /* pageable */
};
typedef CUresult (*call_fn)(struct cell *c);

static CUresult launch_on(struct cell *c, CUstream s)
{
  return cuLaunchKernel(c->scale, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}
static CUresult launch_legacy(struct cell *c) { return launch_on(c, NULL); }
static CUresult launch_per_thread(struct cell *c) { return launch_on(c, CU_STREAM_PER_THREAD); }
static CUresult launch_ex_legacy(struct cell *c)
{
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 32;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = NULL;
  return cuLaunchKernelEx(&cfg, c->scale, NULL, NULL);
}
static CUresult launch_coop_legacy(struct cell *c)
{
  return cuLaunchCooperativeKernel(c->scale, 1, 1, 1, 32, 1, 1, 0, NULL, NULL);
}
static CUresult memcpy_sync(struct cell *c)
{
  memset(c->host, 0x11, sizeof(c->host));
  return cuMemcpyHtoD(c->mem, c->host, sizeof(c->host));
}
static CUresult memset_sync(struct cell *c) { return cuMemsetD8(c->mem, 0x11, sizeof(c->host)); }
static void CUDA_CB host_nop(void *data) { (void)data; }
static CUresult host_func_legacy(struct cell *c)
{
  (void)c;
  return cuLaunchHostFunc(NULL, host_nop, NULL);
}
static CUresult memcpy_async_pageable(struct cell *c)
{
  memset(c->host, 0x22, sizeof(c->host));
  return cuMemcpyHtoDAsync(c->mem, c->host, sizeof(c->host), c->stream);
}

/* 'i' = 906 + capture invalidated; 'o' = ok. */
struct row {
  const char *name;
  call_fn call;
  int other;            /* made by a second thread */
  const char *expect;
  int writes_legacy;    /* legacy-stream work that, allowed, runs at once (memory holds 0x11) */
  int captured_copy;    /* allowed, it is a memcpy node of the graph */
};
static const struct row rows[] = {
  { "cuLaunchKernel on the legacy stream (0), same thread", launch_legacy, 0, "iiio", 0, 0 },
  { "cuLaunchKernel on the legacy stream, another thread", launch_legacy, 1, "iiio", 0, 0 },
  { "cuLaunchKernel on CU_STREAM_PER_THREAD", launch_per_thread, 0, "oooo", 0, 0 },
  { "cuMemcpyHtoD (synchronous, legacy stream)", memcpy_sync, 0, "iiio", 1, 0 },
  { "cuMemsetD8 (synchronous, legacy stream)", memset_sync, 0, "iiio", 1, 0 },
  { "cuMemcpyHtoDAsync from pageable memory into the capture", memcpy_async_pageable, 0, "oooo", 0, 1 },
  /* Not rows of the table: the same rule for the other launch entry points. */
  { "cuLaunchKernelEx on the legacy stream (same rule)", launch_ex_legacy, 0, "iiio", 0, 0 },
  { "cuLaunchCooperativeKernel on the legacy stream (same rule)", launch_coop_legacy, 1, "iiio", 0, 0 },
  /* Measured after the table (tests/fakecuda/README.md). */
  { "cuLaunchHostFunc on the legacy stream (same rule)", host_func_legacy, 0, "iiio", 0, 0 },
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

struct caller {
  call_fn call;
  struct cell *cell;
  CUresult rc;
};
static void *call_thread(void *arg)
{
  struct caller *k = arg;
  k->rc = cuCtxSetCurrent(test_ctx);
  if (k->rc == CUDA_SUCCESS)
    k->rc = k->call(k->cell);
  return NULL;
}

static CUresult call_from(int other, call_fn fn, struct cell *c)
{
  struct caller k = { fn, c, CUDA_ERROR_UNKNOWN };
  if (!other)
    return fn(c);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, call_thread, &k), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  return k.rc;
}

static CUmodule setup_cell(struct cell *c, unsigned flags)
{
  memset(c, 0, sizeof(*c));
  CUmodule m = test_load_module("kernels_sm90.cubin");
  CU_OK(cuModuleGetFunction(&c->add_one, m, "fake_add_one"));
  CU_OK(cuModuleGetFunction(&c->scale, m, "fake_scale"));
  CU_OK(cuStreamCreate(&c->stream, flags));
  CU_OK(cuMemAlloc(&c->mem, sizeof(c->host)));
  CU_OK(cuMemsetD8(c->mem, 0, sizeof(c->host)));
  return m;
}

static void cleanup_cell(struct cell *c, CUmodule m)
{
  CU_OK(cuMemFree(c->mem));
  CU_OK(cuStreamDestroy(c->stream));
  CU_OK(cuModuleUnload(m));
}

static void begin(struct cell *c, CUstreamCaptureMode mode)
{
  CU_OK(cuStreamBeginCapture(c->stream, mode));
  CU_OK(cuLaunchKernel(c->add_one, 1, 1, 1, 32, 1, 1, 0, c->stream, NULL, NULL));
}

static void expect_status(struct cell *c, CUstreamCaptureStatus want, const char *what)
{
  CUstreamCaptureStatus st;
  CU_OK(cuStreamIsCapturing(c->stream, &st));
  ck_assert_msg(st == want, "[%s] capture status %d, want %d", what, (int)st, (int)want);
}

/* Ends the capture: 901 and no graph, or a graph whose kernels are want_kernels. */
static void expect_end(struct cell *c, CUresult want, const char *want_kernels, size_t memcpy_nodes,
                       const char *what)
{
  CUgraph g = (CUgraph)c;
  CUresult end = cuStreamEndCapture(c->stream, &g);
  ck_assert_msg(end == want, "[%s] end returned %d, want %d", what, (int)end, (int)want);
  if (want != CUDA_SUCCESS) {
    ck_assert_msg(g == NULL, "[%s] a failed end returned a graph", what);
    return;
  }
  char names[256];
  test_kernel_names(g, names, sizeof(names));
  ck_assert_msg(strcmp(names, want_kernels) == 0, "[%s] graph kernels '%s', want '%s'", what, names,
                want_kernels);
  ck_assert_msg(test_count_nodes(g, CU_GRAPH_NODE_TYPE_MEMCPY) == memcpy_nodes,
                "[%s] %zu memcpy nodes, want %zu", what, test_count_nodes(g, CU_GRAPH_NODE_TYPE_MEMCPY),
                memcpy_nodes);
  CUgraphExec x;
  CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  CU_OK(cuGraphLaunch(x, c->stream));
  CU_OK(cuGraphExecDestroy(x));
  CU_OK(cuGraphDestroy(g));
}

START_TEST(test_third_cell)
{
  const struct row *r = &rows[_i / NCOLS];
  const struct column *col = &columns[_i % NCOLS];
  const int fail = r->expect[_i % NCOLS] == 'i';
  char what[256];
  snprintf(what, sizeof(what), "%s | %s", r->name, col->name);
  struct cell c;
  CUmodule m = setup_cell(&c, col->stream_flags);
  begin(&c, col->mode);
  CUresult rc = call_from(r->other, r->call, &c);
  ck_assert_msg(rc == (fail ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS),
                "[%s] call returned %d, ground truth says %s", what, (int)rc, fail ? "906" : "ok");
  expect_status(&c, fail ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE, what);
  expect_end(&c, fail ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS, "fake_add_one",
             (size_t)(!fail && r->captured_copy), what);
  /* Allowed legacy-stream work ran at once, outside the graph (the capture escaped it);
   * refused, it did nothing. */
  unsigned char back[sizeof(c.host)];
  CU_OK(cuMemcpyDtoH(back, c.mem, sizeof(back)));
  if (r->writes_legacy)
    ck_assert_msg(back[0] == (fail ? 0 : 0x11), "[%s] device memory holds %#x", what, back[0]);
  if (r->captured_copy)
    ck_assert_msg(back[0] == 0, "[%s] a captured copy ran at capture time", what);
  cleanup_cell(&c, m);
}
END_TEST

/* Other cells (blocking stream, global mode). */
START_TEST(test_fork_unjoined)
{
  struct cell c;
  CUmodule m = setup_cell(&c, 0);
  CUstream side;
  CUevent fork;
  CU_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&fork, 0));
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuEventRecord(fork, c.stream));
  CU_OK(cuStreamWaitEvent(side, fork, 0));
  CUstreamCaptureStatus st;
  CU_OK(cuStreamIsCapturing(side, &st));
  ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);   /* forked into the capture */
  CU_OK(cuLaunchKernel(c.scale, 1, 1, 1, 32, 1, 1, 0, side, NULL, NULL));
  CUgraph g;
  CU_EQ(cuStreamEndCapture(side, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
  expect_end(&c, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, NULL, 0, "fork never joined");
  CU_OK(cuStreamIsCapturing(side, &st));
  ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
  expect_status(&c, CU_STREAM_CAPTURE_STATUS_NONE, "after 904");
  CU_OK(cuEventDestroy(fork));
  CU_OK(cuStreamDestroy(side));
  cleanup_cell(&c, m);
}
END_TEST

START_TEST(test_fork_joined)
{
  struct cell c;
  CUmodule m = setup_cell(&c, 0);
  CUstream side;
  CUevent fork, join;
  CU_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&fork, 0));
  CU_OK(cuEventCreate(&join, 0));
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuEventRecord(fork, c.stream));
  CU_OK(cuStreamWaitEvent(side, fork, 0));
  CU_OK(cuLaunchKernel(c.scale, 1, 1, 1, 32, 1, 1, 0, side, NULL, NULL));
  CU_OK(cuEventRecord(join, side));
  CU_OK(cuStreamWaitEvent(c.stream, join, 0));
  expect_end(&c, CUDA_SUCCESS, "fake_add_one,fake_scale", 0, "fork joined");
  /* Work after the join, never joined again: 904. */
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuEventRecord(fork, c.stream));
  CU_OK(cuStreamWaitEvent(side, fork, 0));
  CU_OK(cuLaunchKernel(c.scale, 1, 1, 1, 32, 1, 1, 0, side, NULL, NULL));
  CU_OK(cuEventRecord(join, side));
  CU_OK(cuStreamWaitEvent(c.stream, join, 0));
  CU_OK(cuLaunchKernel(c.scale, 1, 1, 1, 32, 1, 1, 0, side, NULL, NULL));
  expect_end(&c, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, NULL, 0, "work after the join");
  CU_OK(cuEventDestroy(fork));
  CU_OK(cuEventDestroy(join));
  CU_OK(cuStreamDestroy(side));
  cleanup_cell(&c, m);
}
END_TEST

START_TEST(test_wait_event_before_capture)
{
  struct cell c;
  CUmodule m = setup_cell(&c, 0);
  CUevent before, never;
  CU_OK(cuEventCreate(&before, 0));
  CU_OK(cuEventCreate(&never, 0));
  CU_OK(cuEventRecord(before, c.stream));
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuStreamWaitEvent(c.stream, never, 0));   /* never recorded: ok */
  expect_status(&c, CU_STREAM_CAPTURE_STATUS_ACTIVE, "wait on a never-recorded event");
  CU_EQ(cuStreamWaitEvent(c.stream, before, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  expect_status(&c, CU_STREAM_CAPTURE_STATUS_INVALIDATED, "wait on an event recorded before");
  expect_end(&c, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, NULL, 0, "905");
  CU_OK(cuStreamWaitEvent(c.stream, before, 0));  /* no capture: fine again */
  CU_OK(cuEventDestroy(before));
  CU_OK(cuEventDestroy(never));
  cleanup_cell(&c, m);
}
END_TEST

START_TEST(test_graph_launch_into_capture)
{
  struct cell c;
  CUmodule m = setup_cell(&c, 0);
  CUgraph g;
  CUgraphExec x;
  CU_OK(cuStreamBeginCapture(c.stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cuLaunchKernel(c.add_one, 1, 1, 1, 32, 1, 1, 0, c.stream, NULL, NULL));
  CU_OK(cuStreamEndCapture(c.stream, &g));
  CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_EQ(cuGraphLaunch(x, c.stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  expect_status(&c, CU_STREAM_CAPTURE_STATUS_INVALIDATED, "cuGraphLaunch into the capture");
  expect_end(&c, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, NULL, 0, "cuGraphLaunch");
  CU_OK(cuGraphLaunch(x, c.stream));
  CU_OK(cuGraphExecDestroy(x));
  CU_OK(cuGraphDestroy(g));
  cleanup_cell(&c, m);
}
END_TEST

/* ---- the log callback */
#define MAX_LINES 16
static struct {
  char text[MAX_LINES][256];
  long tid[MAX_LINES];
  int n;
} logged;
static void CUDA_CB on_log(void *data, CUlogLevel level, char *message, size_t length)
{
  (void)level;
  ck_assert_ptr_eq(data, &logged);
  if (logged.n < MAX_LINES) {
    snprintf(logged.text[logged.n], sizeof(logged.text[0]), "%.*s", (int)length, message);
    logged.tid[logged.n] = syscall(SYS_gettid);
  }
  logged.n++;
}

static void expect_lines(const char *const *want, int n, long tid)
{
  ck_assert_msg(logged.n == n, "%d lines logged, want %d (first: '%s')", logged.n, n,
                logged.n ? logged.text[0] : "");
  for (int i = 0; i < n; i++) {
    ck_assert_str_eq(logged.text[i], want[i]);
    ck_assert_msg(logged.tid[i] == tid, "line %d logged on thread %ld, want %ld", i, logged.tid[i], tid);
  }
  logged.n = 0;
}

static const char *const cause906 =
    "Call cannot be made against CU_STREAM_LEGACY while a blocking stream in the same context is capturing";

static long other_tid;
static CUresult legacy_launch_noting_tid(struct cell *c)
{
  other_tid = syscall(SYS_gettid);
  return launch_legacy(c);
}

START_TEST(test_log_callback)
{
  CUlogsCallbackHandle h = NULL;
  memset(&logged, 0, sizeof(logged));
  if (test_driver_version() < 12090) {
    CU_EQ(cuLogsRegisterCallback(on_log, &logged, &h), CUDA_ERROR_NOT_SUPPORTED);
    return;
  }
  CU_OK(cuLogsRegisterCallback(on_log, &logged, &h));
  struct cell c;
  CUmodule m = setup_cell(&c, 0);
  long self = syscall(SYS_gettid);
  ck_assert_int_eq(logged.n, 0);   /* calls that succeed log nothing */

  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_EQ(call_from(1, legacy_launch_noting_tid, &c), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  const char *const l906[] = { cause906, "Returning 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) from cuLaunchKernel" };
  expect_lines(l906, 2, other_tid);   /* on the offending thread */
  CUgraph g;
  CU_EQ(cuStreamEndCapture(c.stream, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  const char *const l901[] = { "Capture was invalidated by a prior API call",
                               "Returning 901 (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) from cuStreamEndCapture" };
  expect_lines(l901, 2, self);

  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUdeviceptr p;
  CU_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  const char *const l900[] = { "API call conflicts with a stream capture sequence initiated from the calling thread",
                               "Returning 900 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) from cuMemAlloc_v2" };
  expect_lines(l900, 2, self);
  CU_EQ(cuStreamEndCapture(c.stream, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  logged.n = 0;

  CUevent before;
  CU_OK(cuEventCreate(&before, 0));
  CU_OK(cuEventRecord(before, c.stream));
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_EQ(cuStreamWaitEvent(c.stream, before, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  const char *const l905[] = { "Returning 905 (CUDA_ERROR_STREAM_CAPTURE_ISOLATION) from cuStreamWaitEvent" };
  expect_lines(l905, 1, self);
  CU_EQ(cuStreamEndCapture(c.stream, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  logged.n = 0;

  CUstream side;
  CU_OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuEventRecord(before, c.stream));
  CU_OK(cuStreamWaitEvent(side, before, 0));
  CU_OK(cuLaunchKernel(c.scale, 1, 1, 1, 32, 1, 1, 0, side, NULL, NULL));
  ck_assert_int_eq(logged.n, 0);
  CU_EQ(cuStreamEndCapture(c.stream, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  const char *const l904[] = { "Capture sequence contains a fork that was not joined to the primary stream",
                               "Returning 904 (CUDA_ERROR_STREAM_CAPTURE_UNJOINED) from cuStreamEndCapture" };
  expect_lines(l904, 2, self);

  CU_OK(cuLogsUnregisterCallback(h));
  begin(&c, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_EQ(launch_legacy(&c), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  CU_EQ(cuStreamEndCapture(c.stream, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  ck_assert_int_eq(logged.n, 0);   /* unregistered: nothing more */
  CU_EQ(cuLogsUnregisterCallback(h), CUDA_ERROR_INVALID_VALUE);
  CU_OK(cuEventDestroy(before));
  CU_OK(cuStreamDestroy(side));
  cleanup_cell(&c, m);
}
END_TEST

/* Measured (H100, driver 580, every mode): cuStreamGetFlags of the capturing
 * stream is refused with 900 and invalidates the capture; of an idle stream,
 * while another captures, it is answered and breaks nothing. */
START_TEST(test_stream_get_flags)
{
  static const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                              CU_STREAM_CAPTURE_MODE_RELAXED};
  struct cell c;
  CUmodule m = setup_cell(&c, 0);
  CUstream idle;
  CU_OK(cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING));
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    unsigned flags = 0;
    begin(&c, modes[i]);
    CU_OK(cuStreamGetFlags(idle, &flags));
    ck_assert_uint_eq(flags, CU_STREAM_NON_BLOCKING);
    expect_status(&c, CU_STREAM_CAPTURE_STATUS_ACTIVE, "cuStreamGetFlags of an idle stream");
    CU_EQ(cuStreamGetFlags(c.stream, &flags), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_status(&c, CU_STREAM_CAPTURE_STATUS_INVALIDATED, "cuStreamGetFlags of the capturing stream");
    expect_end(&c, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, NULL, 0, "cuStreamGetFlags");
  }
  CU_OK(cuStreamDestroy(idle));
  cleanup_cell(&c, m);
}
END_TEST

Suite *suite_third(void)
{
  Suite *s = suite_create("third matrix");
  TCase *tc = tcase_create("third matrix cells");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_loop_test(tc, test_third_cell, 0, NROWS * NCOLS);
  tcase_add_test(tc, test_fork_unjoined);
  tcase_add_test(tc, test_fork_joined);
  tcase_add_test(tc, test_wait_event_before_capture);
  tcase_add_test(tc, test_graph_launch_into_capture);
  tcase_add_test(tc, test_log_callback);
  tcase_add_test(tc, test_stream_get_flags);
  suite_add_tcase(s, tc);
  return s;
}
