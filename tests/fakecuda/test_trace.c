/* fakecuda: FAKECUDA_TRACE=path appends "<call> tid=<n> capturing=<open captures> result=<rc>"
 * per call, so a test can tell which calls reached the driver and when. */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char trace_path[] = "/tmp/fakecuda-trace-XXXXXX";

static void trace_on(void)
{
  int fd = mkstemp(trace_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(setenv("FAKECUDA_TRACE", trace_path, 1), 0);
}

/* The trace's lines, in order (at most max). */
static int trace_lines(char lines[][128], int max)
{
  FILE *f = fopen(trace_path, "r");
  ck_assert_ptr_nonnull(f);
  int n = 0;
  while (n < max && fgets(lines[n], 128, f) != NULL) {
    lines[n][strcspn(lines[n], "\n")] = '\0';
    n++;
  }
  fclose(f);
  return n;
}

static CUmodule traced_module;
static void *load_in_thread(void *img)
{
  if (cuCtxSetCurrent(test_ctx) == CUDA_SUCCESS)
    (void)cuModuleLoadData(&traced_module, img);
  return NULL;
}

START_TEST(test_trace_lines)
{
  unsigned char *img = test_read_data("kernels_sm90.cubin", NULL);
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  trace_on();
  int me = (int)syscall(SYS_gettid);

  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, load_in_thread, img), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  CUgraph g;
  CU_OK(cuStreamEndCapture(s, &g));
  CUmodule m;
  CU_OK(cuModuleLoadData(&m, img));
  CU_EQ(cuModuleUnload((CUmodule)(uintptr_t)0x10), CUDA_ERROR_INVALID_HANDLE);
  ck_assert_int_eq(unsetenv("FAKECUDA_TRACE"), 0);
  CU_OK(cuModuleUnload(m));          /* not traced any more */

  char lines[16][128];
  int n = trace_lines(lines, 16);
  ck_assert_int_eq(n, 6);
  char want[128];
  snprintf(want, sizeof(want), "cuStreamBeginCapture_v2 tid=%d capturing=0 result=0", me);
  ck_assert_str_eq(lines[0], want);
  /* The other thread's calls: its own tid, one capture open. */
  int other = 0;
  ck_assert_int_eq(sscanf(lines[1], "cuCtxSetCurrent tid=%d capturing=1 result=0", &other), 1);
  ck_assert_int_ne(other, me);
  snprintf(want, sizeof(want), "cuModuleLoadData tid=%d capturing=1 result=0", other);
  ck_assert_str_eq(lines[2], want);
  snprintf(want, sizeof(want), "cuStreamEndCapture tid=%d capturing=1 result=0", me);
  ck_assert_str_eq(lines[3], want);
  snprintf(want, sizeof(want), "cuModuleLoadData tid=%d capturing=0 result=0", me);
  ck_assert_str_eq(lines[4], want);
  snprintf(want, sizeof(want), "cuModuleUnload tid=%d capturing=0 result=%d", me,
           (int)CUDA_ERROR_INVALID_HANDLE);
  ck_assert_str_eq(lines[5], want);

  CU_OK(cuModuleUnload(traced_module));
  CU_OK(cuGraphDestroy(g));
  CU_OK(cuStreamDestroy(s));
  unlink(trace_path);
  free(img);
}
END_TEST

/* After fork() the child's trace lines carry the child's tid, not the parent's. */
START_TEST(test_trace_after_fork)
{
  int v;
  trace_on();
  CU_OK(cuDriverGetVersion(&v));          /* traced: the fake has learnt the parent's tid */
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0)
    _exit(cuDriverGetVersion(&v) == CUDA_SUCCESS ? 0 : 1);
  int status = -1;
  ck_assert_int_eq(waitpid(child, &status, 0), child);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char lines[4][128];
  ck_assert_int_eq(trace_lines(lines, 4), 2);
  char want[128];
  snprintf(want, sizeof(want), "cuDriverGetVersion tid=%d capturing=0 result=0", (int)getpid());
  ck_assert_str_eq(lines[0], want);
  snprintf(want, sizeof(want), "cuDriverGetVersion tid=%d capturing=0 result=0", (int)child);
  ck_assert_str_eq(lines[1], want);
  unlink(trace_path);
}
END_TEST

/* FAKECUDA_TRACE_CAPTURES=1: each line also says which captures the call
 * opened, closed, invalidated first (broke=) and was refused for (hit=). */
START_TEST(test_trace_capture_fields)
{
  CUstream a, b;
  CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  trace_on();
  ck_assert_int_eq(setenv("FAKECUDA_TRACE_CAPTURES", "1", 1), 0);
  CU_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cuStreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUdeviceptr p;
  CU_EQ(cuMemAlloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CU_EQ(cuMemAlloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph g;
  CU_EQ(cuStreamEndCapture(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  ck_assert_int_eq(unsetenv("FAKECUDA_TRACE_CAPTURES"), 0);
  CU_EQ(cuStreamEndCapture(b, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  ck_assert_int_eq(unsetenv("FAKECUDA_TRACE"), 0);

  char lines[8][128];
  ck_assert_int_eq(trace_lines(lines, 8), 6);
  unsigned ia, ib;
  ck_assert_int_eq(sscanf(lines[0], "cuStreamBeginCapture_v2 tid=%*d capturing=0 result=0 opened=%u", &ia), 1);
  ck_assert_int_eq(sscanf(lines[1], "cuStreamBeginCapture_v2 tid=%*d capturing=1 result=0 opened=%u", &ib), 1);
  ck_assert_uint_ne(ia, ib);
  char want[128];
  snprintf(want, sizeof(want), "result=900 broke=%u,%u hit=%u,%u", ib, ia, ib, ia);
  ck_assert_ptr_nonnull(strstr(lines[2], want));
  snprintf(want, sizeof(want), "result=900 hit=%u,%u", ib, ia);
  ck_assert_ptr_nonnull(strstr(lines[3], want));
  snprintf(want, sizeof(want), "result=901 closed=%u", ia);
  ck_assert_ptr_nonnull(strstr(lines[4], want));
  ck_assert_ptr_null(strstr(lines[5], "closed=")); /* off again */
  unlink(trace_path);
}
END_TEST

Suite *suite_trace(void)
{
  Suite *s = suite_create("trace");
  TCase *tc = tcase_create("trace");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_test(tc, test_trace_lines);
  tcase_add_test(tc, test_trace_after_fork);
  tcase_add_test(tc, test_trace_capture_fields);
  suite_add_tcase(s, tc);
  return s;
}
