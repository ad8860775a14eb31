/* fakecuda: drives the fake through both measured ground-truth tables of
 * docs/driver-semantics.md (the first table, 7 columns, and the
 * "Second matrix", 4 columns), every row in every column. Each cell: a fresh capture on a
 * non-blocking stream already holding one kernel node (and, for the second matrix's
 * event rows, an event recorded into the capturing stream after it); the row's call made
 * mid-capture by the capturing thread or by a second thread, optionally with that thread
 * swapped to RELAXED around it; then the result code, the capture status, and
 * cuStreamEndCapture (graph with the right kernels + instantiate + launch, or
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED with no graph) are checked. A function obtained
 * mid-capture ("+mid", and every load row) is launched into the same capture and must be
 * in the graph. Run by meson with FAKECUDA_DRIVER_VERSION=12020 and =13000. */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct column {
  const char *name;
  CUstreamCaptureMode mode;  /* the capture's mode */
  int other;                 /* the call is made by a second thread */
  int swap;                  /* the calling thread swaps itself to RELAXED around the call */
};
/* Columns of the first table, in its order. */
static const struct column columns1[] = {
  { "same/global", CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 0 },
  { "same/thread-local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 0, 0 },
  { "same/relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, 0, 0 },
  { "same/global+swap", CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 1 },
  { "other/global", CU_STREAM_CAPTURE_MODE_GLOBAL, 1, 0 },
  { "other/thread-local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 1, 0 },
  { "other/global+swap", CU_STREAM_CAPTURE_MODE_GLOBAL, 1, 1 },
};
/* Columns of the "Second matrix", in its order. */
static const struct column columns2[] = {
  { "same/global", CU_STREAM_CAPTURE_MODE_GLOBAL, 0, 0 },
  { "same/thread-local", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 0, 0 },
  { "same/relaxed", CU_STREAM_CAPTURE_MODE_RELAXED, 0, 0 },
  { "other/global", CU_STREAM_CAPTURE_MODE_GLOBAL, 1, 0 },
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
  /* second matrix */
  CUlibrary pre_library;     /* loaded before the capture */
  CUkernel pre_kernel;       /* fake_scale of pre_library, never launched before the call */
  CUfunction pre_function;   /* fake_scale of pre_module */
  CUgraph pre_graph;         /* unrelated graph */
  CUgraphExec pre_exec;      /* unrelated executable graph, instantiated before the capture */
  CUevent cap_event;         /* recorded into the capture (event rows) */
  void *reg_buf;             /* host memory for cuMemHostRegister */
  int registered;
  int launched_mid;          /* the call itself launched fake_scale into the capture */
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

/* Calls of the second matrix. */
static CUresult kernel_get_function(struct cell *c)
{
  return cuKernelGetFunction(&c->new_function, c->pre_kernel);
}
static CUresult launch_cukernel(struct cell *c)
{
  CUresult rc = cuLaunchKernel((CUfunction)c->pre_kernel, 1, 1, 1, 32, 1, 1, 0, c->stream, NULL, NULL);
  c->launched_mid = rc == CUDA_SUCCESS;
  return rc;
}
static CUresult module_load_file(struct cell *c)
{
  CUresult rc = cuModuleLoad(&c->new_module, FAKECUDA_TEST_DATA "/kernels_sm90.cubin");
  if (rc == CUDA_SUCCESS)
    rc = cuModuleGetFunction(&c->new_function, c->new_module, "fake_scale");
  return rc;
}
static CUresult library_get_module(struct cell *c)
{
  CUmodule m;
  CUresult rc = cuLibraryGetModule(&m, c->pre_library);
  if (rc == CUDA_SUCCESS)
    rc = cuModuleGetFunction(&c->new_function, m, "fake_scale");
  return rc;
}
static CUresult graph_destroy(struct cell *c)
{
  CUresult rc = cuGraphDestroy(c->pre_graph);
  if (rc == CUDA_SUCCESS)
    c->pre_graph = NULL;
  return rc;
}
static CUresult graph_exec_destroy(struct cell *c)
{
  CUresult rc = cuGraphExecDestroy(c->pre_exec);
  if (rc == CUDA_SUCCESS)
    c->pre_exec = NULL;
  return rc;
}
static CUresult event_stream_destroy(struct cell *c)
{
  CUresult rc = cuEventDestroy(c->cap_event);
  if (rc == CUDA_SUCCESS) {
    c->cap_event = NULL;
    rc = cuStreamDestroy(c->idle);
  }
  if (rc == CUDA_SUCCESS)
    c->idle = NULL;
  return rc;
}
static CUresult memset_memcpy(struct cell *c)
{
  unsigned char back[16];
  CUresult rc = cuMemsetD8(c->pre_mem, 0x5a, sizeof(back));
  if (rc == CUDA_SUCCESS)
    rc = cuMemcpyDtoH(back, c->pre_mem, sizeof(back));
  for (size_t i = 0; rc == CUDA_SUCCESS && i < sizeof(back); i++)
    if (back[i] != 0x5a)
      rc = CUDA_ERROR_UNKNOWN;
  return rc;
}
static CUresult captured_event_query(struct cell *c) { return cuEventQuery(c->cap_event); }
static CUresult captured_event_sync(struct cell *c) { return cuEventSynchronize(c->cap_event); }
static void CUDA_CB host_fn(void *data) { (void)data; }
static CUresult launch_host_func(struct cell *c) { return cuLaunchHostFunc(c->stream, host_fn, c); }
static CUresult host_register(struct cell *c)
{
  CUresult rc = cuMemHostRegister(c->reg_buf, 4096, 0);
  c->registered = rc == CUDA_SUCCESS;
  return rc;
}
static CUresult alloc_host(struct cell *c) { return cuMemAllocHost(&c->new_host, 4096); }
static CUresult alloc_managed(struct cell *c)
{
  return cuMemAllocManaged(&c->new_mem, 4096, CU_MEM_ATTACH_GLOBAL);
}
static CUresult alloc_free_async(struct cell *c)
{
  CUresult rc = cuMemAllocAsync(&c->new_mem, 4096, c->stream);
  if (rc == CUDA_SUCCESS && (rc = cuMemFreeAsync(c->new_mem, c->stream)) == CUDA_SUCCESS)
    c->new_mem = 0;
  return rc;
}
static CUresult wait_captured_event(struct cell *c) { return cuStreamWaitEvent(c->idle, c->cap_event, 0); }
static CUresult set_limit(struct cell *c)
{
  (void)c;
  size_t v;
  CUresult rc = cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE);
  return rc == CUDA_SUCCESS ? cuCtxSetLimit(CU_LIMIT_STACK_SIZE, v) : rc;
}
static CUresult occupancy(struct cell *c)
{
  int n = 0;
  CUresult rc = cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, c->pre_function, 128, 0);
  return (rc == CUDA_SUCCESS && n <= 0) ? CUDA_ERROR_UNKNOWN : rc;
}

/* Expected cells, one letter per column in the order of the table's columns, copied from
 * docs/driver-semantics.md:
 * 'o' = ok, 'x' = 900 + capture invalidated, 'e' = 907 (CUDA_ERROR_CAPTURED_EVENT) +
 * capture invalidated. A row whose call names several entry points that can each break
 * the capture is split into one row per entry point, each with the table's letters. */

/* The first table (7 columns: columns1). */
#define ALL_OK     "ooooooo"
#define PROHIBITED "xx..x.."   /* the capture-interaction rule; '.' = ok */
#define ALL_FAIL   "xxxxxxx"
/* The "Second matrix" (4 columns: columns2). */
#define ALL_OK_2     "oooo"
#define PROHIBITED_2 "xx.x"    /* the capture-interaction rule; '.' = ok */
#define CAPTURED_2   "eeee"

/* Module loads (expect NULL): ALL_OK from driver 12.3, PROHIBITED before. */
struct row {
  const char *name;
  call_fn call;
  const char *expect;    /* NULL for load rows */
  const char *image;     /* data file the call loads, if any */
  int mid;               /* "+mid": a function obtained mid-capture goes into the capture */
  int event;             /* an event is recorded into the capturing stream before the call */
};

/* From driver-semantics.md, the first table. */
static const struct row rows1[] = {
  { "cuModuleLoadData (cubin)", load_cubin, NULL, "kernels_sm90.cubin", 1, 0 },
  { "cuModuleLoadData (PTX)", load_ptx, NULL, "kernels.ptx", 1, 0 },
  { "cuModuleLoadDataEx (cubin)", load_ex, NULL, "kernels_sm90.cubin", 1, 0 },
  { "cuModuleLoadFatBinary", load_fatbin, NULL, "kernels_sm90.fatbin", 1, 0 },
  { "cuLibraryLoadData + cuLibraryGetKernel", load_library, NULL, "kernels_sm90.cubin", 1, 0 },
  { "cuModuleUnload", unload, PROHIBITED, NULL, 0, 0 },
  { "cuModuleGetFunction, cuFuncGetAttribute, cuFuncSetAttribute, cuFuncSetCacheConfig",
    function_calls, ALL_OK, NULL, 0, 0 },
  { "cuMemAlloc", mem_alloc, PROHIBITED, NULL, 0, 0 },
  { "cuMemFree", mem_free, PROHIBITED, NULL, 0, 0 },
  { "cuMemHostAlloc", mem_host_alloc, PROHIBITED, NULL, 0, 0 },
  { "cuMemAllocAsync (capturing stream)", mem_alloc_async, ALL_OK, NULL, 0, 0 },
  { "cuMemcpyHtoD (synchronous, pageable)", memcpy_htod, ALL_OK, NULL, 0, 0 },
  { "cuCtxSynchronize", ctx_sync, ALL_FAIL, NULL, 0, 0 },
  { "cuStreamSynchronize (the capturing stream)", sync_capturing, ALL_FAIL, NULL, 0, 0 },
  { "cuStreamQuery (the capturing stream)", query_capturing, ALL_FAIL, NULL, 0, 0 },
  { "cuStreamSynchronize (another, idle stream)", sync_idle, PROHIBITED, NULL, 0, 0 },
  { "cuEventQuery (event recorded before capture)", event_query, PROHIBITED, NULL, 0, 0 },
  { "cuEventSynchronize (event recorded before capture)", event_sync, PROHIBITED, NULL, 0, 0 },
  { "cuDeviceGetAttribute, cuCtxGetCurrent, cuStreamCreate, cuEventCreate, cuMemGetInfo",
    harmless, ALL_OK, NULL, 0, 0 },
};

/* From driver-semantics.md, "Second matrix". */
static const struct row rows2[] = {
  { "cuKernelGetFunction (library loaded before capture, kernel never used)",
    kernel_get_function, ALL_OK_2, NULL, 1, 0 },
  { "cuLibraryLoadData + cuLibraryGetKernel + cuKernelGetFunction",
    load_library, NULL, "kernels_sm90.cubin", 1, 0 },
  { "cuLaunchKernel with a CUkernel (library loaded before capture)",
    launch_cukernel, ALL_OK_2, NULL, 1, 0 },
  { "cuModuleLoad (file path) + cuModuleGetFunction", module_load_file, NULL, NULL, 1, 0 },
  { "cuLibraryGetModule + cuModuleGetFunction", library_get_module, ALL_OK_2, NULL, 1, 0 },
  { "cuGraphDestroy (an unrelated graph)", graph_destroy, ALL_OK_2, NULL, 0, 0 },
  { "cuGraphExecDestroy (an unrelated executable graph)", graph_exec_destroy, PROHIBITED_2, NULL, 0, 0 },
  { "cuEventDestroy, cuStreamDestroy (idle stream)", event_stream_destroy, ALL_OK_2, NULL, 0, 1 },
  { "cuMemsetD8, cuMemcpyDtoH (synchronous; capture on a non-blocking stream)",
    memset_memcpy, ALL_OK_2, NULL, 0, 0 },
  { "cuEventQuery (event recorded in the capturing stream)", captured_event_query, CAPTURED_2, NULL, 0, 1 },
  { "cuEventSynchronize (event recorded in the capturing stream)", captured_event_sync, CAPTURED_2,
    NULL, 0, 1 },
  { "cuLaunchHostFunc (capturing stream)", launch_host_func, ALL_OK_2, NULL, 0, 0 },
  { "cuMemHostRegister", host_register, PROHIBITED_2, NULL, 0, 0 },
  { "cuMemAllocHost", alloc_host, PROHIBITED_2, NULL, 0, 0 },
  { "cuMemAllocManaged", alloc_managed, PROHIBITED_2, NULL, 0, 0 },
  { "cuMemAllocAsync + cuMemFreeAsync (capturing stream)", alloc_free_async, ALL_OK_2, NULL, 0, 0 },
  { "cuStreamWaitEvent (another stream waits on an event recorded in the capture)",
    wait_captured_event, ALL_OK_2, NULL, 0, 1 },
  { "cuCtxSetLimit", set_limit, PROHIBITED_2, NULL, 0, 0 },
  { "cuOccupancyMaxActiveBlocksPerMultiprocessor", occupancy, ALL_OK_2, NULL, 0, 0 },
};

struct matrix {
  const struct column *cols;
  int ncols;
  const struct row *rows;
  int nrows;
  const char *prohibited, *all_ok;   /* what a load row expects, by driver version */
};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
static const struct matrix matrix1 = { columns1, COUNT(columns1), rows1, COUNT(rows1), PROHIBITED, ALL_OK };
static const struct matrix matrix2 = { columns2, COUNT(columns2), rows2, COUNT(rows2), PROHIBITED_2,
                                       ALL_OK_2 };

/* The cell's letter: 'o', 'x' or 'e' ('.' reads as 'o'). */
static char cell_letter(const struct matrix *m, const struct row *r, int col)
{
  const char *expect = r->expect;
  if (expect == NULL)
    expect = test_driver_version() < 12030 ? m->prohibited : m->all_ok;
  ck_assert_int_eq((int)strlen(expect), m->ncols);
  return expect[col] == '.' ? 'o' : expect[col];
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

/* What a cell needs before its capture begins: streams, events, a module,
 * memory, a library, graphs made outside the capture. Returns the module
 * holding add_one. */
static CUmodule cell_setup(struct cell *c, const struct row *r, CUfunction *add_one)
{
  CUmodule base = test_load_module("kernels_sm90.cubin");
  CU_OK(cuModuleGetFunction(add_one, base, "fake_add_one"));
  CU_OK(cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&c->idle, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&c->event, 0));
  CU_OK(cuEventRecord(c->event, c->idle));
  CU_OK(cuEventCreate(&c->cap_event, 0));
  c->pre_module = test_load_module("kernels.ptx");
  CU_OK(cuModuleGetFunction(&c->pre_function, c->pre_module, "fake_scale"));
  CU_OK(cuMemAlloc(&c->pre_mem, 4096));
  unsigned char *lib_image = test_read_data("kernels_sm90.cubin", NULL);
  CU_OK(cuLibraryLoadData(&c->pre_library, lib_image, NULL, NULL, 0, NULL, NULL, 0));
  free(lib_image);
  CU_OK(cuLibraryGetKernel(&c->pre_kernel, c->pre_library, "fake_scale"));
  CU_OK(cuGraphCreate(&c->pre_graph, 0));
  CUgraph exec_graph;
  CU_OK(cuGraphCreate(&exec_graph, 0));
  CU_OK(cuGraphInstantiateWithFlags(&c->pre_exec, exec_graph, 0));
  CU_OK(cuGraphDestroy(exec_graph));
  c->reg_buf = calloc(1, 4096);
  ck_assert_ptr_nonnull(c->reg_buf);
  if (r->image != NULL)
    c->image = test_read_data(r->image, NULL);
  return base;
}

/* The capture's end, and the graph it made: what the ground truth says. */
static void cell_end_and_check(struct cell *c, const struct row *r, const struct column *col, int fail)
{
  /* A kernel obtained mid-capture goes into the same capture (load and "+mid" rows). */
  const char *want_kernels = "fake_add_one";
  if (!fail && !c->launched_mid && c->new_function == NULL && c->new_module != NULL)
    CU_OK(cuModuleGetFunction(&c->new_function, c->new_module, "fake_scale"));
  if (!fail && !c->launched_mid && c->new_function != NULL) {
    launch(c->new_function, c->stream);
    c->launched_mid = 1;
  }
  if (c->launched_mid)
    want_kernels = "fake_add_one,fake_scale";
  ck_assert_msg(fail || !r->mid || c->launched_mid, "[%s | %s] no function obtained mid-capture",
                r->name, col->name);

  CUgraph g = (CUgraph)c;   /* must be overwritten */
  CUresult end = cuStreamEndCapture(c->stream, &g);
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
    const size_t host_nodes = r->call == launch_host_func ? 1 : 0;
    ck_assert_msg(test_count_nodes(g, CU_GRAPH_NODE_TYPE_HOST) == host_nodes,
                  "[%s | %s] graph host nodes %zu, want %zu", r->name, col->name,
                  test_count_nodes(g, CU_GRAPH_NODE_TYPE_HOST), host_nodes);
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
    CU_OK(cuGraphLaunch(x, c->stream));
    CU_OK(cuStreamSynchronize(c->stream));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
  }
}

/* After the capture everything the row touched is allowed again, and is
 * released. */
static void cell_release(struct cell *c, const struct row *r, int fail, CUmodule base)
{
  if (r->call == memcpy_htod && !fail) {
    char back[16];
    CU_OK(cuMemcpyDtoH(back, c->pre_mem, sizeof(back)));
    ck_assert_str_eq(back, "fakecuda memcpy");
  }
  if (r->event && c->cap_event != NULL)
    CU_OK(cuEventQuery(c->cap_event));    /* its capture is over: no longer 907 */
  if (r->call == unload && !fail)
    CU_EQ(cuModuleUnload(c->pre_module), CUDA_ERROR_INVALID_HANDLE);   /* already unloaded */
  else
    CU_OK(cuModuleUnload(c->pre_module));
  if (c->pre_mem != 0)
    CU_OK(cuMemFree(c->pre_mem));
  if (c->new_mem != 0)
    CU_OK(cuMemFree(c->new_mem));
  if (c->new_host != NULL)
    CU_OK(cuMemFreeHost(c->new_host));
  if (c->registered)
    CU_OK(cuMemHostUnregister(c->reg_buf));
  free(c->reg_buf);
  if (c->new_module != NULL)
    CU_OK(cuModuleUnload(c->new_module));
  if (c->new_library != NULL)
    CU_OK(cuLibraryUnload(c->new_library));
  CU_OK(cuLibraryUnload(c->pre_library));
  if (c->pre_graph != NULL)
    CU_OK(cuGraphDestroy(c->pre_graph));
  if (c->pre_exec != NULL)
    CU_OK(cuGraphExecDestroy(c->pre_exec));
  if (c->new_stream != NULL)
    CU_OK(cuStreamDestroy(c->new_stream));
  if (c->new_event != NULL)
    CU_OK(cuEventDestroy(c->new_event));
  if (c->cap_event != NULL)
    CU_OK(cuEventDestroy(c->cap_event));
  CU_OK(cuEventDestroy(c->event));
  if (c->idle != NULL)
    CU_OK(cuStreamDestroy(c->idle));
  CU_OK(cuStreamDestroy(c->stream));
  CU_OK(cuModuleUnload(base));
  free(c->image);
}

static void run_cell(const struct matrix *m, int i)
{
  const struct row *r = &m->rows[i / m->ncols];
  const int colno = i % m->ncols;
  const struct column *col = &m->cols[colno];
  const char letter = cell_letter(m, r, colno);
  const int fail = letter != 'o';
  struct cell c;
  memset(&c, 0, sizeof(c));

  CUfunction add_one;
  CUmodule base = cell_setup(&c, r, &add_one);

  CU_OK(cuStreamBeginCapture(c.stream, col->mode));
  launch(add_one, c.stream);
  if (r->event)
    CU_OK(cuEventRecord(c.cap_event, c.stream));

  struct caller k = { col, r->call, &c, CUDA_ERROR_UNKNOWN };
  if (col->other) {
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, make_call, &k), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
  } else {
    make_call(&k);
  }
  const CUresult want = letter == 'x' ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
                        : letter == 'e' ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
  ck_assert_msg(k.rc == want, "[%s | %s] call returned %d, ground truth says %d",
                r->name, col->name, (int)k.rc, (int)want);

  CUstreamCaptureStatus status;
  CU_OK(cuStreamIsCapturing(c.stream, &status));
  ck_assert_msg(status == (fail ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE),
                "[%s | %s] capture status %d after the call", r->name, col->name, (int)status);

  cell_end_and_check(&c, r, col, fail);

  cell_release(&c, r, fail, base);
}

START_TEST(test_cell)
{
  run_cell(&matrix1, _i);
}
END_TEST

START_TEST(test_cell_second)
{
  run_cell(&matrix2, _i);
}
END_TEST

Suite *suite_ground_truth(void)
{
  Suite *s = suite_create("ground truth table");
  TCase *tc = tcase_create("cells");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_loop_test(tc, test_cell, 0, matrix1.nrows * matrix1.ncols);
  suite_add_tcase(s, tc);
  TCase *tc2 = tcase_create("second matrix cells");
  tcase_add_checked_fixture(tc2, test_setup, NULL);
  tcase_add_loop_test(tc2, test_cell_second, 0, matrix2.nrows * matrix2.ncols);
  suite_add_tcase(s, tc2);
  return s;
}

int main(void)
{
  SRunner *sr = srunner_create(suite_ground_truth());
  srunner_add_suite(sr, suite_procaddress());
  srunner_add_suite(sr, suite_modules());
  srunner_add_suite(sr, suite_trace());
  srunner_add_suite(sr, suite_rules());
  srunner_add_suite(sr, suite_third());
  srunner_add_suite(sr, suite_ends());
  srunner_add_suite(sr, suite_copies());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  int run = srunner_ntests_run(sr);
  srunner_free(sr);
  printf("fakecuda (driver %d): %s, %d of %d checks failed\n", test_driver_version(),
         failed == 0 ? "PASS" : "FAIL", failed, run);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
