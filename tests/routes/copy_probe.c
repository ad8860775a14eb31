/* Every copy and memset row under capguard (tests/fakecuda/copy_calls.h holds the
 * calls): one capture (on a blocking stream with --blocking, else non-blocking;
 * --mode) holding one kernel, and in it --op ROW (a row's name in copy_calls.h) made on
 * --place legacy (the legacy stream: NULL, or CU_STREAM_LEGACY for a _ptsz form),
 * capturing (the capturing stream) or per-thread (stream 0 of a _ptsz form), by the
 * capturing thread or another (--thread other). --pinned makes the host buffers
 * page-locked (cuMemHostRegister). Linked to the driver: each call is the exported
 * symbol, which LD_PRELOAD puts capguard in front of. Prints op_result= and
 * end_result= for test_escapes.py. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "copy_calls.h"

static void die(const char *what) {
  fprintf(stderr, "copy_probe: %s\n", what);
  exit(2);
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "copy_probe: %s returned %d\n", #call, (int)r_);                             \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

static const struct row *row;
static struct cell cell;
static CUstream where;
static CUcontext ctx;
static CUresult op_result = CUDA_ERROR_UNKNOWN;

static void *op_thread(void *arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(ctx));
  op_result = row->call(&cell, where);
  return NULL;
}

int main(int argc, char **argv) {
  const char *op = NULL, *place = "legacy";
  int blocking = 0, other = 0, pinned = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--route")) i++; /* always the exported symbol */
    else if (!strcmp(a, "--op")) op = v, i++;
    else if (!strcmp(a, "--place")) place = v, i++;
    else if (!strcmp(a, "--thread")) other = !strcmp(v, "other"), i++;
    else if (!strcmp(a, "--blocking")) blocking = 1;
    else if (!strcmp(a, "--pinned")) pinned = 1;
    else if (!strcmp(a, "--mode")) {
      mode = !strcmp(v, "relaxed") ? CU_STREAM_CAPTURE_MODE_RELAXED
             : !strcmp(v, "thread-local") ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                          : CU_STREAM_CAPTURE_MODE_GLOBAL;
      i++;
    } else die("unknown argument");
  }
  if (!op || !(row = copy_row(op)))
    die("--op names no row of copy_calls.h");
  CUdevice dev;
  CUmodule mod;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  const char *cubin = getenv("CG_CUBIN");
  if (!cubin)
    die("CG_CUBIN not set");
  CHECK(cuModuleLoad(&mod, cubin));
  CHECK(cuModuleGetFunction(&cell.add_one, mod, "fake_add_one"));
  CUfunction fn = cell.add_one;
  CHECK(copy_cell_setup(&cell, ctx, blocking ? 0 : CU_STREAM_NON_BLOCKING));
  cell.add_one = fn;
  if (pinned) {
    CHECK(cuMemHostRegister_v2(cell.host_src, N, 0));
    CHECK(cuMemHostRegister_v2(cell.host_dst, N, 0));
  }
  where = !strcmp(place, "capturing") ? cell.stream
          : !strcmp(place, "per-thread") ? NULL
          : row->how == 'X'               ? CU_STREAM_LEGACY
                                          : NULL;

  CHECK(cuStreamBeginCapture_v2(cell.stream, mode));
  CHECK(cuLaunchKernel(cell.add_one, 1, 1, 1, 32, 1, 1, 0, cell.stream, NULL, NULL));
  if (other) {
    pthread_t t;
    pthread_create(&t, NULL, op_thread, NULL);
    pthread_join(t, NULL);
  } else {
    op_result = row->call(&cell, where);
  }
  CUgraph g;
  CUresult end = cuStreamEndCapture(cell.stream, &g);
  printf("op_result=%d\nend_result=%d\n", (int)op_result, (int)end);
  return 0;
}
