/* Cost per call of driver entry points as a cudart-style caller reaches them
 * (cuGetProcAddress), for run_bench.sh to compare with and without capguard:
 *   untouched   cuDeviceGetCount: capguard hands back the driver's own pointer
 *   exchange    cuThreadExchangeStreamCaptureMode: wrapped, nothing capturing
 *   load+unload cuModuleLoadData + cuModuleUnload of a small cubin: wrapped, nothing capturing
 *   capture     cuStreamBeginCapture + cuStreamEndCapture + cuGraphDestroy (empty capture)
 * Prints "name ns_per_call owner_of_pointer" lines; median of 9 rounds. */
#include <cuda.h>

#include "capguard/file_read.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static gpa_fn gpa;

static void *get(const char *name) {
  void *p = NULL;
  if (gpa(name, &p, 12000, 0, NULL) != CUDA_SUCCESS || !p) {
    fprintf(stderr, "bench: %s not found\n", name);
    exit(2);
  }
  return p;
}

static const char *owner(void *p) {
  Dl_info i;
  if (!dladdr(p, &i) || !i.dli_fname)
    return "?";
  const char *s = strrchr(i.dli_fname, '/');
  return s ? s + 1 : i.dli_fname;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define ROUNDS 9
#define TIME(label, ptr, iters, body)                                                                             \
  do {                                                                                                            \
    double r[ROUNDS];                                                                                             \
    for (int k = 0; k < ROUNDS; k++) {                                                                            \
      double t0 = now_ns();                                                                                       \
      for (long it = 0; it < (iters); it++) {                                                                     \
        body;                                                                                                     \
      }                                                                                                           \
      r[k] = (now_ns() - t0) / (double)(iters);                                                                   \
    }                                                                                                             \
    qsort(r, ROUNDS, sizeof r[0], cmp);                                                                           \
    printf("%-12s %10.1f %s\n", label, r[ROUNDS / 2], owner((void *)(ptr)));                                      \
  } while (0)

int main(int argc, char **argv) {
  long iters = argc > 2 ? atol(argv[2]) : 200000;
  size_t image_size;
  void *image = argc > 1 ? cg_read_file(argv[1], (size_t)1 << 30, &image_size) : NULL;
  if (!image) {
    fprintf(stderr, "usage: bench_calls CUBIN [ITERATIONS]\n");
    return 2;
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "bench: %s\n", dlerror());
    return 2;
  }
  gpa_fn v2 = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
  if (!v2 || v2("cuGetProcAddress", (void **)&gpa, 12000, 0, NULL) != CUDA_SUCCESS)
    return 2;
  CUresult (*init)(unsigned) = get("cuInit");
  CUresult (*device_get)(CUdevice *, int) = get("cuDeviceGet");
  CUresult (*retain)(CUcontext *, CUdevice) = get("cuDevicePrimaryCtxRetain");
  CUresult (*set_current)(CUcontext) = get("cuCtxSetCurrent");
  CUresult (*stream_create)(CUstream *, unsigned) = get("cuStreamCreate");
  CUresult (*count)(int *) = get("cuDeviceGetCount");
  CUresult (*exchange)(CUstreamCaptureMode *) = get("cuThreadExchangeStreamCaptureMode");
  CUresult (*load)(CUmodule *, const void *) = get("cuModuleLoadData");
  CUresult (*unload)(CUmodule) = get("cuModuleUnload");
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = get("cuStreamBeginCapture");
  CUresult (*end)(CUstream, CUgraph *) = get("cuStreamEndCapture");
  CUresult (*graph_destroy)(CUgraph) = get("cuGraphDestroy");
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  if (init(0) || device_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx) ||
      stream_create(&s, CU_STREAM_NON_BLOCKING)) {
    fprintf(stderr, "bench: driver set-up failed\n");
    return 2;
  }
  int n;
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUmodule mod;
  CUgraph g;
  TIME("untouched", count, iters, count(&n));
  TIME("exchange", exchange, iters, exchange(&m));
  TIME("load+unload", load, iters / 20, (load(&mod, image), unload(mod)));
  TIME("capture", begin, iters / 20, (begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL), end(s, &g), graph_destroy(g)));
  return 0;
}
