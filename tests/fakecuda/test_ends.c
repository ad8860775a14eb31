/* fakecuda: the ends the driver refuses or makes for you, a thread exiting with its
 * capture open, and a capturing stream destroyed: every cell measured on the H100
 * (driver 580.159.04; tests/fakecuda/README.md, "Ends"). Each cell: a fresh capture on a
 * non-blocking stream holding one kernel node, then the end (or exit, or destroy), then
 * what the driver says of the stream, whether a prohibited call is refused, and what a
 * second end gets. */
#include "test_util.h"

#include <pthread.h>
#include <signal.h>

static CUmodule mod;
static CUfunction fn;

static void ends_setup(void)
{
  test_setup();
  mod = test_load_module("kernels_sm90.cubin");
  CU_OK(cuModuleGetFunction(&fn, mod, "fake_add_one"));
}

static CUstream capture_with_kernel(CUstreamCaptureMode mode)
{
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamBeginCapture(s, mode));
  CU_OK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  return s;
}

static CUstreamCaptureStatus status_of(CUstream s)
{
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  CU_OK(cuStreamIsCapturing(s, &st));
  return st;
}

/* cuMemAlloc then cuMemFree: 0 when no capture prohibits the caller. */
static CUresult alloc_result(void)
{
  CUdeviceptr p;
  CUresult rc = cuMemAlloc(&p, 64);
  if (rc == CUDA_SUCCESS)
    CU_OK(cuMemFree(p));
  return rc;
}

/* A thread that does one thing to a stream and reports the result. */
struct job {
  CUstream s;
  int what;            /* 0: end, 1: begin and exit, 2: destroy, 3: end after a destroy */
  CUstreamCaptureMode mode;
  CUresult rc, alloc_rc;
  CUgraph g;
};
static void *run_job(void *arg)
{
  struct job *j = arg;
  j->rc = cuCtxSetCurrent(test_ctx);
  if (j->rc != CUDA_SUCCESS)
    return NULL;
  if (j->what == 0 || j->what == 3)
    j->rc = cuStreamEndCapture(j->s, &j->g);
  else if (j->what == 1) {
    j->rc = cuStreamBeginCapture(j->s, j->mode);
    if (j->rc == CUDA_SUCCESS)
      j->rc = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, j->s, NULL, NULL);
  } else if (j->what == 2)
    j->rc = cuStreamDestroy(j->s);
  if (j->what != 1)   /* the capturing thread leaves its capture untouched */
    j->alloc_rc = alloc_result();
  return NULL;
}
static void on_thread(struct job *j)
{
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, run_job, j), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
}

static const CUstreamCaptureMode modes[] = {
  CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_RELAXED
};

/* cuStreamEndCapture from another thread: global and thread-local 908, relaxed 0; the
 * capture is over in every case, and the capturing thread's own end gets 401. */
START_TEST(test_end_from_another_thread)
{
  CUstreamCaptureMode mode = modes[_i];
  CUstream s = capture_with_kernel(mode);
  struct job j = { .s = s, .what = 0 };
  on_thread(&j);
  ck_assert_int_eq(j.rc, mode == CU_STREAM_CAPTURE_MODE_RELAXED ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
  ck_assert_int_eq(alloc_result(), CUDA_SUCCESS);
  ck_assert_int_eq(j.alloc_rc, CUDA_SUCCESS);
  CUgraph g = NULL;
  CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
  ck_assert_ptr_null(g);
  if (j.g != NULL)
    CU_OK(cuGraphDestroy(j.g));
  CU_OK(cuStreamDestroy(s));
}
END_TEST

/* cuStreamEndCapture(stream, NULL): 0, and the capture is over; a real end then gets 401. */
START_TEST(test_end_with_null_graph)
{
  CUstream s = capture_with_kernel(modes[_i]);
  CU_OK(cuStreamEndCapture(s, NULL));
  ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
  ck_assert_int_eq(alloc_result(), CUDA_SUCCESS);
  CUgraph g = NULL;
  CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
  CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A thread exits with its capture open: it stays open. Global: the main thread's alloc is
 * refused (900, invalidating it), its end then returns 901 and ends it. Relaxed: alloc 0,
 * end 0. */
START_TEST(test_thread_exits_with_capture_open)
{
  CUstreamCaptureMode mode = _i == 0 ? CU_STREAM_CAPTURE_MODE_GLOBAL : CU_STREAM_CAPTURE_MODE_RELAXED;
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  struct job j = { .s = s, .what = 1, .mode = mode };
  on_thread(&j);
  CU_OK(j.rc);
  ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph g = NULL;
  if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
    ck_assert_int_eq(alloc_result(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  } else {
    ck_assert_int_eq(alloc_result(), CUDA_SUCCESS);
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
  }
  ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
  CU_OK(cuStreamDestroy(s));
}
END_TEST

/* cuStreamDestroy of a capturing stream, from the capturing thread (_i even) or another
 * (_i odd), global or relaxed: 0 and the capture is over; allocations succeed on both
 * threads, the context synchronises, and a fresh capture begins and ends. */
START_TEST(test_destroy_capturing_stream)
{
  CUstreamCaptureMode mode = _i < 2 ? CU_STREAM_CAPTURE_MODE_GLOBAL : CU_STREAM_CAPTURE_MODE_RELAXED;
  CUstream s = capture_with_kernel(mode);
  if (_i % 2 == 0) {
    CU_OK(cuStreamDestroy(s));
    ck_assert_int_eq(alloc_result(), CUDA_SUCCESS);
  } else {
    struct job j = { .s = s, .what = 2 };
    on_thread(&j);
    CU_OK(j.rc);
    ck_assert_int_eq(j.alloc_rc, CUDA_SUCCESS);
  }
  ck_assert_int_eq(alloc_result(), CUDA_SUCCESS);
  CU_OK(cuCtxSynchronize());
  CUstream fresh = capture_with_kernel(mode);
  CUgraph g;
  CU_OK(cuStreamEndCapture(fresh, &g));
  CU_OK(cuGraphDestroy(g));
  CU_OK(cuStreamDestroy(fresh));
  /* Another thread's end of the destroyed handle: 709. */
  struct job j = { .s = s, .what = 3 };
  on_thread(&j);
  ck_assert_int_eq(j.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED);
}
END_TEST

/* The calls on which the real driver segfaulted: the fake aborts. */
START_TEST(test_destroyed_stream_is_capturing_aborts)
{
  CUstream s = capture_with_kernel(CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuStreamDestroy(s));
  CUstreamCaptureStatus st;
  cuStreamIsCapturing(s, &st);
}
END_TEST

START_TEST(test_destroyed_stream_capture_info_aborts)
{
  CUstream s = capture_with_kernel(CU_STREAM_CAPTURE_MODE_RELAXED);
  CU_OK(cuStreamDestroy(s));
  CUstreamCaptureStatus st;
  cuStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL);
}
END_TEST

START_TEST(test_destroyed_stream_own_end_aborts)
{
  CUstream s = capture_with_kernel(CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuStreamDestroy(s));
  CUgraph g;
  cuStreamEndCapture(s, &g);
}
END_TEST

Suite *suite_ends(void)
{
  Suite *s = suite_create("ends");
  TCase *tc = tcase_create("ends");
  tcase_add_checked_fixture(tc, ends_setup, NULL);
  tcase_add_loop_test(tc, test_end_from_another_thread, 0, 3);
  tcase_add_loop_test(tc, test_end_with_null_graph, 0, 3);
  tcase_add_loop_test(tc, test_thread_exits_with_capture_open, 0, 2);
  tcase_add_loop_test(tc, test_destroy_capturing_stream, 0, 4);
  tcase_add_test_raise_signal(tc, test_destroyed_stream_is_capturing_aborts, SIGABRT);
  tcase_add_test_raise_signal(tc, test_destroyed_stream_capture_info_aborts, SIGABRT);
  tcase_add_test_raise_signal(tc, test_destroyed_stream_own_end_aborts, SIGABRT);
  suite_add_tcase(s, tc);
  return s;
}
