/* Cost per call of driver entry points as a cudart-style caller reaches them
 * (cuGetProcAddress), for run_bench.sh to compare with and without capguard:
 *   untouched   cuDeviceGetCount: capguard hands back the driver's own pointer
 *   exchange    cuThreadExchangeStreamCaptureMode: wrapped, nothing capturing
 *   load+unload cuModuleLoadData + cuModuleUnload of a small cubin: wrapped, nothing capturing
 *   capture     cuStreamBeginCapture + cuStreamEndCapture + cuGraphDestroy (empty capture)
 * Prints "name ns_per_call owner_of_pointer" lines; median of 9 rounds. */
#include <cuda.h>

#include "capguard/clock.h"
#include "capguard/file_read.h"
#include "driver_open.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *owner(void *p) {
  Dl_info i;
  if (!dladdr(p, &i) || !i.dli_fname)
    return "?";
  const char *s = strrchr(i.dli_fname, '/');
  return s ? s + 1 : i.dli_fname;
}

static double now_ns(void) { return (double)cg_monotonic_ns(); }

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
  if (tk_driver_open("bench") != 0) {
    fprintf(stderr, "bench: no CUDA driver (libcuda.so.1 with cuGetProcAddress)\n");
    return 2;
  }
  CUresult (*count)(int *) = tk_driver_get("cuDeviceGetCount");
  CUresult (*exchange)(CUstreamCaptureMode *) = tk_driver_get("cuThreadExchangeStreamCaptureMode");
  CUresult (*load)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUresult (*unload)(CUmodule) = tk_driver_get("cuModuleUnload");
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = tk_driver_get("cuStreamBeginCapture");
  CUresult (*end)(CUstream, CUgraph *) = tk_driver_get("cuStreamEndCapture");
  CUresult (*graph_destroy)(CUgraph) = tk_driver_get("cuGraphDestroy");
  CUstream s;
  if (tk_driver_setup(&s)) {
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
