/* fakecuda: rules beyond the cells of the two tables, each a small test:
 * - the "rescue" capguard relies on: a thread swapped to RELAXED may cuMemAlloc while a
 *   GLOBAL capture is open on another thread (and without the swap it may not);
 * - a host wait on an event recorded into a capture is CUDA_ERROR_CAPTURED_EVENT and
 *   invalidates the capture even from a thread swapped to RELAXED;
 * - the entry points the tables name only by their base name (_v2, _ptsz, WithFlags, the
 *   pitched allocation, the limits getter, unregistering) follow the rule of their row. */
#include "test_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* The per-thread-default-stream flavours, which cuda.h declares only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM (exported by the fake like by the real driver). */
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream);
CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData);

struct env {
  CUmodule mod;
  CUfunction add_one;
  CUstream stream;     /* capturing */
  CUstream idle;
  CUevent event;
};

static void begin(struct env *e, CUstreamCaptureMode mode)
{
  e->mod = test_load_module("kernels_sm90.cubin");
  CU_OK(cuModuleGetFunction(&e->add_one, e->mod, "fake_add_one"));
  CU_OK(cuStreamCreate(&e->stream, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&e->idle, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&e->event, 0));
  CU_OK(cuStreamBeginCapture(e->stream, mode));
  CU_OK(cuLaunchKernel(e->add_one, 1, 1, 1, 32, 1, 1, 0, e->stream, NULL, NULL));
}

static CUstreamCaptureStatus status_of(const struct env *e)
{
  CUstreamCaptureStatus st;
  CU_OK(cuStreamIsCapturing(e->stream, &st));
  return st;
}

/* Ends the capture (901 and no graph if invalidated, else a graph that launches). */
static void finish(struct env *e, int invalidated)
{
  CUgraph g = NULL;
  if (invalidated) {
    CU_EQ(cuStreamEndCapture(e->stream, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_ptr_null(g);
  } else {
    CU_OK(cuStreamEndCapture(e->stream, &g));
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
    CU_OK(cuGraphLaunch(x, e->stream));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
  }
  CU_OK(cuEventDestroy(e->event));
  CU_OK(cuStreamDestroy(e->idle));
  CU_OK(cuStreamDestroy(e->stream));
  CU_OK(cuModuleUnload(e->mod));
}

/* A call made by a second thread, optionally swapped to RELAXED around it. */
struct other {
  struct env *e;
  int swap;
  CUresult (*call)(struct env *e, void **keep);
  void *keep;
  CUresult rc;
};

static void *other_main(void *arg)
{
  struct other *o = arg;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  o->rc = cuCtxSetCurrent(test_ctx);
  if (o->rc == CUDA_SUCCESS && o->swap)
    o->rc = cuThreadExchangeStreamCaptureMode(&mode);
  if (o->rc == CUDA_SUCCESS)
    o->rc = o->call(o->e, &o->keep);
  if (o->swap && cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS)
    o->rc = CUDA_ERROR_UNKNOWN;
  return NULL;
}

static CUresult in_other_thread(struct env *e, int swap, CUresult (*call)(struct env *, void **),
                                void **keep)
{
  struct other o = { e, swap, call, NULL, CUDA_ERROR_UNKNOWN };
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, other_main, &o), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  if (keep != NULL)
    *keep = o.keep;
  return o.rc;
}

static CUresult do_alloc(struct env *e, void **keep)
{
  (void)e;
  CUdeviceptr p = 0;
  CUresult rc = cuMemAlloc(&p, 4096);
  *keep = (void *)(uintptr_t)p;
  return rc;
}

START_TEST(test_rescue_relaxed_alloc)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  void *p = NULL;
  CU_OK(in_other_thread(&e, 1, do_alloc, &p));
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  finish(&e, 0);
  CU_OK(cuMemFree((CUdeviceptr)(uintptr_t)p));
}
END_TEST

START_TEST(test_unswapped_alloc_breaks)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  void *p = NULL;
  CU_EQ(in_other_thread(&e, 0, do_alloc, &p), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ck_assert_ptr_null(p);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  finish(&e, 1);
}
END_TEST

static CUresult do_event_query(struct env *e, void **keep)
{
  (void)keep;
  return cuEventQuery(e->event);
}

START_TEST(test_captured_event_from_relaxed_thread)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuEventRecord(e.event, e.stream));
  CU_EQ(in_other_thread(&e, 1, do_event_query, NULL), CUDA_ERROR_CAPTURED_EVENT);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  finish(&e, 1);
}
END_TEST

START_TEST(test_captured_event_same_thread_swapped)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuEventRecord(e.event, e.stream));
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CU_EQ(cuEventSynchronize(e.event), CUDA_ERROR_CAPTURED_EVENT);
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  finish(&e, 1);
}
END_TEST

/* Recorded again outside the capture, the event is an ordinary one: the rule of the
 * first table applies (a RELAXED thread may wait on it). */
START_TEST(test_rerecorded_event_is_plain)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuEventRecord(e.event, e.stream));
  CU_OK(cuEventRecord(e.event, e.idle));
  CU_OK(in_other_thread(&e, 1, do_event_query, NULL));
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  finish(&e, 0);
}
END_TEST

static CUresult do_ctx_sync_v2(struct env *e, void **keep)
{
  (void)e; (void)keep;
  return cuCtxSynchronize_v2(test_ctx);
}

START_TEST(test_ctx_sync_v2_from_relaxed_thread)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_RELAXED);
  CU_EQ(in_other_thread(&e, 1, do_ctx_sync_v2, NULL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  finish(&e, 1);
}
END_TEST

static CUresult do_stream_query_ptsz(struct env *e, void **keep)
{
  (void)keep;
  return cuStreamQuery_ptsz(e->stream);
}

START_TEST(test_stream_query_ptsz_capturing)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_RELAXED);
  CU_EQ(in_other_thread(&e, 1, do_stream_query_ptsz, NULL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  finish(&e, 1);
}
END_TEST

START_TEST(test_pitch_alloc_rule)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUdeviceptr p = 0;
  size_t pitch = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CU_OK(cuMemAllocPitch(&p, &pitch, 100, 3, 4));
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  ck_assert_uint_eq(pitch % 512, 0);
  ck_assert_uint_ge(pitch, 100);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUdeviceptr q = 0;
  CU_EQ(cuMemAllocPitch(&q, &pitch, 100, 3, 4), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  finish(&e, 1);
  CU_OK(cuMemFree(p));
}
END_TEST

/* Getting a limit is allowed mid-capture; unregistering host memory is refused with 900
 * and invalidates the capture, as measured on the H100 (driver 580), and is done after. */
START_TEST(test_allowed_getters)
{
  void *buf = calloc(1, 4096);
  ck_assert_ptr_nonnull(buf);
  CU_OK(cuMemHostRegister(buf, 4096, 0));
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  size_t v = 0;
  CU_OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
  ck_assert_uint_gt(v, 0);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CU_EQ(cuMemHostUnregister(buf), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ck_assert_int_eq(status_of(&e), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  finish(&e, 1);
  CU_OK(cuMemHostUnregister(buf));
  CU_EQ(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  free(buf);
}
END_TEST

/* As on the real driver, only CU_EVENT_RECORD_EXTERNAL makes a record an event node; a
 * plain record still makes the event one "last recorded in the capture". */
START_TEST(test_record_with_flags)
{
  struct env e;
  begin(&e, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUevent ext;
  CU_OK(cuEventCreate(&ext, 0));
  CU_OK(cuEventRecordWithFlags(ext, e.stream, CU_EVENT_RECORD_EXTERNAL));
  CU_OK(cuEventRecordWithFlags_ptsz(e.event, e.stream, CU_EVENT_RECORD_DEFAULT));
  CU_EQ(cuEventRecordWithFlags(ext, e.stream, 0x80), CUDA_ERROR_INVALID_VALUE);
  CU_OK(cuStreamWaitEvent_ptsz(e.idle, e.event, 0));
  CUgraph g = NULL;
  CU_OK(cuStreamEndCapture(e.stream, &g));
  ck_assert_uint_eq(test_count_nodes(g, CU_GRAPH_NODE_TYPE_EVENT_RECORD), 1);
  ck_assert_uint_eq(test_count_nodes(g, CU_GRAPH_NODE_TYPE_KERNEL), 1);
  CU_OK(cuGraphDestroy(g));
  CU_OK(cuEventQuery(ext));          /* the capture is over */
  CU_OK(cuEventDestroy(ext));
  CU_OK(cuEventDestroy(e.event));
  CU_OK(cuStreamDestroy(e.idle));
  CU_OK(cuStreamDestroy(e.stream));
  CU_OK(cuModuleUnload(e.mod));
}
END_TEST

static void CUDA_CB count_call(void *data) { ++*(int *)data; }

/* Outside a capture a host function runs (at once); inside, it becomes a host node. */
START_TEST(test_host_func_outside_capture)
{
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  int calls = 0;
  CU_OK(cuLaunchHostFunc(s, count_call, &calls));
  CU_OK(cuLaunchHostFunc_ptsz(NULL, count_call, &calls));
  ck_assert_int_eq(calls, 2);
  CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *suite_rules(void)
{
  Suite *s = suite_create("capture rules beyond the tables");
  TCase *tc = tcase_create("rules");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_test(tc, test_rescue_relaxed_alloc);
  tcase_add_test(tc, test_unswapped_alloc_breaks);
  tcase_add_test(tc, test_captured_event_from_relaxed_thread);
  tcase_add_test(tc, test_captured_event_same_thread_swapped);
  tcase_add_test(tc, test_rerecorded_event_is_plain);
  tcase_add_test(tc, test_ctx_sync_v2_from_relaxed_thread);
  tcase_add_test(tc, test_stream_query_ptsz_capturing);
  tcase_add_test(tc, test_pitch_alloc_rule);
  tcase_add_test(tc, test_allowed_getters);
  tcase_add_test(tc, test_record_with_flags);
  tcase_add_test(tc, test_host_func_outside_capture);
  suite_add_tcase(s, tc);
  return s;
}
