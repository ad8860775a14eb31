/* fakecuda: drives the fake through the measured ground-truth table
 * (shared/ground-truth/capture-semantics.md), every row it implements in every
 * column. Each cell: a fresh capture on a non-blocking stream already holding one kernel
 * node; the row's call made mid-capture by the capturing thread or by a second thread,
 * optionally with that thread swapped to RELAXED around it; then the result code, the
 * capture status, and cuStreamEndCapture (graph + instantiate + launch, or
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED with no graph) are checked.
 * Run by meson with FAKECUDA_DRIVER_VERSION=12020 and =13000. */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NCOLS = 7 };
struct column {
  const char *name;
  CUstreamCaptureMode mode;  /* the capture's mode */
  int other;                 /* the call is made by a second thread */
  int swap;                  /* the calling thread swaps itself to RELAXED around the call */
};
static const struct column columns[NCOLS] = {
  { "same/global", CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 0 },
  { "same/thread-local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 0, 0 },
  { "same/relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, 0, 0 },
  { "same/global+swap", CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 1 },
  { "other/global", CU_STREAM_CAPTURE_MODE_GLOBAL, 1, 0 },
  { "other/thread-local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 1, 0 },
  { "other/global+swap", CU_STREAM_CAPTURE_MODE_GLOBAL, 1, 1 },
};

/* What a cell's call works on, set up before the capture and cleaned up after it. */
struct cell {
  CUstream stream;           /* the capturing stream */
  CUstream idle;             /* another stream, no work */
  CUevent event;             /* recorded on idle before the capture */
  CUmodule pre_module;       /* loaded before the capture */
  CUdeviceptr pre_mem;       /* allocated before the capture */
  unsigned char *image;      /* image the call loads */
  CUmodule new_module;       /* loaded by the call */
  CUlibrary new_library;     /* loaded by the call */
  CUfunction new_function;   /* kernel from what the call loaded, launched into the capture */
  CUdeviceptr new_mem;       /* allocated by the call */
  void *new_host;            /* pinned memory allocated by the call */
  CUstream new_stream;
  CUevent new_event;
};

typedef CUresult (*call_fn)(struct cell *c);

static CUresult load_cubin(struct cell *c) { return cuModuleLoadData(&c->new_module, c->image); }
static CUresult load_ptx(struct cell *c) { return cuModuleLoadData(&c->new_module, c->image); }
static CUresult load_ex(struct cell *c)
{
  return cuModuleLoadDataEx(&c->new_module, c->image, 0, NULL, NULL);
}
static CUresult load_fatbin(struct cell *c) { return cuModuleLoadFatBinary(&c->new_module, c->image); }
static CUresult load_library(struct cell *c)
{
  CUresult rc = cuLibraryLoadData(&c->new_library, c->image, NULL, NULL, 0, NULL, NULL, 0);
  CUkernel k;
  if (rc == CUDA_SUCCESS && (rc = cuLibraryGetKernel(&k, c->new_library, "fake_scale")) == CUDA_SUCCESS)
    rc = cuKernelGetFunction(&c->new_function, k);
  return rc;
}
static CUresult unload(struct cell *c) { return cuModuleUnload(c->pre_module); }
static CUresult function_calls(struct cell *c)
{
  CUfunction f;
  int v;
  CUresult rc = cuModuleGetFunction(&f, c->pre_module, "fake_scale");
  if (rc == CUDA_SUCCESS)
    rc = cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
  if (rc == CUDA_SUCCESS)
    rc = cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000);
  if (rc == CUDA_SUCCESS)
    rc = cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_SHARED);
  return rc;
}
static CUresult mem_alloc(struct cell *c) { return cuMemAlloc(&c->new_mem, 4096); }
static CUresult mem_free(struct cell *c)
{
  CUresult rc = cuMemFree(c->pre_mem);
  if (rc == CUDA_SUCCESS)
    c->pre_mem = 0;
  return rc;
}
static CUresult mem_host_alloc(struct cell *c) { return cuMemHostAlloc(&c->new_host, 4096, 0); }
static CUresult mem_alloc_async(struct cell *c) { return cuMemAllocAsync(&c->new_mem, 4096, c->stream); }
static CUresult memcpy_htod(struct cell *c)
{
  static const char msg[16] = "fakecuda memcpy";
  return cuMemcpyHtoD(c->pre_mem, msg, sizeof(msg));
}
static CUresult ctx_sync(struct cell *c) { (void)c; return cuCtxSynchronize(); }
static CUresult sync_capturing(struct cell *c) { return cuStreamSynchronize(c->stream); }
static CUresult query_capturing(struct cell *c) { return cuStreamQuery(c->stream); }
static CUresult sync_idle(struct cell *c) { return cuStreamSynchronize(c->idle); }
static CUresult event_query(struct cell *c) { return cuEventQuery(c->event); }
static CUresult event_sync(struct cell *c) { return cuEventSynchronize(c->event); }
static CUresult harmless(struct cell *c)
{
  int v;
  CUcontext cur;
  size_t free_b, total;
  CUresult rc = cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
  if (rc == CUDA_SUCCESS)
    rc = cuCtxGetCurrent(&cur);
  if (rc == CUDA_SUCCESS)
    rc = cuStreamCreate(&c->new_stream, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS)
    rc = cuEventCreate(&c->new_event, 0);
  if (rc == CUDA_SUCCESS)
    rc = cuMemGetInfo(&free_b, &total);
  return rc;
}

/* Expected cells, one letter per column in the order of columns[]:
 * 'o' = ok, 'x' = 900 + capture invalidated. */
#define ALL_OK     "ooooooo"
#define PROHIBITED "xx..x.."   /* the capture-interaction rule; '.' = ok */
#define ALL_FAIL   "xxxxxxx"

enum { LOAD_ROW = 1 };   /* module loads: ALL_OK from driver 12.3, PROHIBITED before */
struct row {
  const char *name;
  call_fn call;
  const char *expect;    /* NULL for load rows */
  const char *image;     /* data file the call loads, if any */
};
static const struct row rows[] = {
  { "cuModuleLoadData (cubin)", load_cubin, NULL, "kernels_sm90.cubin" },
  { "cuModuleLoadData (PTX)", load_ptx, NULL, "kernels.ptx" },
  { "cuModuleLoadDataEx (cubin)", load_ex, NULL, "kernels_sm90.cubin" },
  { "cuModuleLoadFatBinary", load_fatbin, NULL, "kernels_sm90.fatbin" },
  { "cuLibraryLoadData + cuLibraryGetKernel", load_library, NULL, "kernels_sm90.cubin" },
  { "cuModuleUnload", unload, PROHIBITED, NULL },
  { "cuModuleGetFunction, cuFuncGetAttribute, cuFuncSetAttribute, cuFuncSetCacheConfig",
    function_calls, ALL_OK, NULL },
  { "cuMemAlloc", mem_alloc, PROHIBITED, NULL },
  { "cuMemFree", mem_free, PROHIBITED, NULL },
  { "cuMemHostAlloc", mem_host_alloc, PROHIBITED, NULL },
  { "cuMemAllocAsync (capturing stream)", mem_alloc_async, ALL_OK, NULL },
  { "cuMemcpyHtoD (synchronous, pageable)", memcpy_htod, ALL_OK, NULL },
  { "cuCtxSynchronize", ctx_sync, ALL_FAIL, NULL },
  { "cuStreamSynchronize (the capturing stream)", sync_capturing, ALL_FAIL, NULL },
  { "cuStreamQuery (the capturing stream)", query_capturing, ALL_FAIL, NULL },
  { "cuStreamSynchronize (another, idle stream)", sync_idle, PROHIBITED, NULL },
  { "cuEventQuery (event recorded before capture)", event_query, PROHIBITED, NULL },
  { "cuEventSynchronize (event recorded before capture)", event_sync, PROHIBITED, NULL },
  { "cuDeviceGetAttribute, cuCtxGetCurrent, cuStreamCreate, cuEventCreate, cuMemGetInfo",
    harmless, ALL_OK, NULL },
};
enum { NROWS = sizeof(rows) / sizeof(rows[0]) };

static int cell_expects_failure(const struct row *r, int col)
{
  const char *expect = r->expect;
  if (expect == NULL)
    expect = test_driver_version() < 12030 ? PROHIBITED : ALL_OK;
  return expect[col] == 'x';
}

struct caller {
  const struct column *col;
  call_fn call;
  struct cell *cell;
  CUresult rc;
};

/* The call as the column says: swapped to RELAXED or not, in whichever thread runs this. */
static void *make_call(void *arg)
{
  struct caller *k = arg;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (k->col->other && cuCtxSetCurrent(test_ctx) != CUDA_SUCCESS) {
    k->rc = CUDA_ERROR_INVALID_CONTEXT;
    return NULL;
  }
  if (k->col->swap && cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS) {
    k->rc = CUDA_ERROR_UNKNOWN;
    return NULL;
  }
  k->rc = k->call(k->cell);
  if (k->col->swap && cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS)
    k->rc = CUDA_ERROR_UNKNOWN;
  return NULL;
}

static void launch(CUfunction f, CUstream s)
{
  CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

START_TEST(test_cell)
{
  const struct row *r = &rows[_i / NCOLS];
  const int colno = _i % NCOLS;
  const struct column *col = &columns[colno];
  const int fail = cell_expects_failure(r, colno);
  struct cell c;
  memset(&c, 0, sizeof(c));

  CUmodule base = test_load_module("kernels_sm90.cubin");
  CUfunction add_one;
  CU_OK(cuModuleGetFunction(&add_one, base, "fake_add_one"));
  CU_OK(cuStreamCreate(&c.stream, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&c.idle, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&c.event, 0));
  CU_OK(cuEventRecord(c.event, c.idle));
  c.pre_module = test_load_module("kernels.ptx");
  CU_OK(cuMemAlloc(&c.pre_mem, 4096));
  if (r->image != NULL)
    c.image = test_read_data(r->image, NULL);

  CU_OK(cuStreamBeginCapture(c.stream, col->mode));
  launch(add_one, c.stream);

  struct caller k = { col, r->call, &c, CUDA_ERROR_UNKNOWN };
  if (col->other) {
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, make_call, &k), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
  } else {
    make_call(&k);
  }
  const CUresult want = fail ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
  ck_assert_msg(k.rc == want, "[%s | %s] call returned %d, ground truth says %d",
                r->name, col->name, (int)k.rc, (int)want);

  CUstreamCaptureStatus status;
  CU_OK(cuStreamIsCapturing(c.stream, &status));
  ck_assert_msg(status == (fail ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE),
                "[%s | %s] capture status %d after the call", r->name, col->name, (int)status);

  /* A kernel from a module loaded mid-capture goes into the same capture (all load rows). */
  const char *want_kernels = "fake_add_one";
  if (!fail && (c.new_module != NULL || c.new_library != NULL)) {
    if (c.new_function == NULL)
      CU_OK(cuModuleGetFunction(&c.new_function, c.new_module, "fake_scale"));
    launch(c.new_function, c.stream);
    want_kernels = "fake_add_one,fake_scale";
  }

  CUgraph g = (CUgraph)&c;   /* must be overwritten */
  CUresult end = cuStreamEndCapture(c.stream, &g);
  if (fail) {
    ck_assert_msg(end == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && g == NULL,
                  "[%s | %s] end capture returned %d, graph %p; want 901 and no graph",
                  r->name, col->name, (int)end, (void *)g);
  } else {
    ck_assert_msg(end == CUDA_SUCCESS && g != NULL, "[%s | %s] end capture returned %d",
                  r->name, col->name, (int)end);
    char names[256];
    test_kernel_names(g, names, sizeof(names));
    ck_assert_msg(strcmp(names, want_kernels) == 0, "[%s | %s] graph kernels '%s', want '%s'",
                  r->name, col->name, names, want_kernels);
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
    CU_OK(cuGraphLaunch(x, c.stream));
    CU_OK(cuStreamSynchronize(c.stream));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
  }

  /* After the capture everything the row touched is allowed again. */
  if (r->call == memcpy_htod && !fail) {
    char back[16];
    CU_OK(cuMemcpyDtoH(back, c.pre_mem, sizeof(back)));
    ck_assert_str_eq(back, "fakecuda memcpy");
  }
  if (r->call == unload && !fail)
    CU_EQ(cuModuleUnload(c.pre_module), CUDA_ERROR_INVALID_HANDLE);   /* already unloaded */
  else
    CU_OK(cuModuleUnload(c.pre_module));
  if (c.pre_mem != 0)
    CU_OK(cuMemFree(c.pre_mem));
  if (c.new_mem != 0)
    CU_OK(cuMemFree(c.new_mem));
  if (c.new_host != NULL)
    CU_OK(cuMemFreeHost(c.new_host));
  if (c.new_module != NULL)
    CU_OK(cuModuleUnload(c.new_module));
  if (c.new_library != NULL)
    CU_OK(cuLibraryUnload(c.new_library));
  if (c.new_stream != NULL)
    CU_OK(cuStreamDestroy(c.new_stream));
  if (c.new_event != NULL)
    CU_OK(cuEventDestroy(c.new_event));
  CU_OK(cuEventDestroy(c.event));
  CU_OK(cuStreamDestroy(c.idle));
  CU_OK(cuStreamDestroy(c.stream));
  CU_OK(cuModuleUnload(base));
  free(c.image);
}
END_TEST

Suite *suite_ground_truth(void)
{
  Suite *s = suite_create("ground truth table");
  TCase *tc = tcase_create("cells");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_loop_test(tc, test_cell, 0, NROWS * NCOLS);
  suite_add_tcase(s, tc);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(suite_ground_truth());
  srunner_add_suite(sr, suite_procaddress());
  srunner_add_suite(sr, suite_modules());
  srunner_add_suite(sr, suite_trace());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  int run = srunner_ntests_run(sr);
  srunner_free(sr);
  printf("fakecuda (driver %d): %s, %d of %d checks failed\n", test_driver_version(),
         failed == 0 ? "PASS" : "FAIL", failed, run);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
