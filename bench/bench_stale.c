/* The stale-pointer check's cost in instructions (bench/run_bench_stale.sh
 * runs it under callgrind, with and without CAPGUARD_STALE=1), over the fake
 * driver: a start-up shaped like an engine's -- BUFFERS buffers, CAPTURES
 * graphs captured, each of KERNELS launches of cg_test_fill over the buffers
 * in turn, each instantiated and kept alive -- then REPLAYS launches of every
 * graph, no memory freed (a healthy run: what the check may cost is its walk
 * at each instantiation and its look at each launch). With TIME, each
 * capture and instantiation is timed on the wall clock too, and the median
 * printed (run_bench_stale.sh alternates none, none again -- the A/A --,
 * guard and --stale).
 * Usage: bench_stale CUBIN CAPTURES KERNELS BUFFERS REPLAYS [TIME] */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capguard/file_read.h"

#include "probe_check.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 6 && !(argc == 7 && !strcmp(argv[6], "TIME"))) {
    fprintf(stderr, "usage: bench_stale CUBIN CAPTURES KERNELS BUFFERS REPLAYS [TIME]\n");
    return 2;
  }
  int timed = argc == 7;
  int captures = atoi(argv[2]), kernels = atoi(argv[3]), buffers = atoi(argv[4]), replays = atoi(argv[5]);
  if (captures < 1 || kernels < 1 || buffers < 1 || replays < 0) {
    fprintf(stderr, "bench_stale: counts must be positive\n");
    return 2;
  }
  size_t len = 0;
  char *image = cg_read_file(argv[1], 1 << 24, &len);
  if (!image) {
    fprintf(stderr, "bench_stale: cannot read %s\n", argv[1]);
    return 2;
  }
  probe_primary_context();
  CUmodule mod;
  CHECK(cuModuleLoadData(&mod, image));
  CUfunction fill;
  CHECK(cuModuleGetFunction(&fill, mod, "cg_test_fill"));
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr *buf = calloc((size_t)buffers, sizeof *buf);
  CUgraphExec *execs = calloc((size_t)captures, sizeof *execs);
  double *took = calloc((size_t)captures, sizeof *took);
  if (!buf || !execs || !took)
    return 1;
  for (int b = 0; b < buffers; b++)
    CHECK(cuMemAlloc(&buf[b], 4096));
  float v = 1.0f;
  int n = 1024;
  for (int c = 0; c < captures; c++) {
    double t0 = now_us();
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int k = 0; k < kernels; k++) {
      void *params[] = {&buf[(c + k) % buffers], &v, &n};
      CHECK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, s, params, NULL));
    }
    CUgraph g;
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuGraphInstantiateWithFlags(&execs[c], g, 0));
    took[c] = now_us() - t0;
    CHECK(cuGraphDestroy(g));
  }
  for (int r = 0; r < replays; r++)
    for (int c = 0; c < captures; c++)
      CHECK(cuGraphLaunch(execs[c], s));
  for (int c = 0; c < captures; c++)
    CHECK(cuGraphExecDestroy(execs[c]));
  for (int b = 0; b < buffers; b++)
    CHECK(cuMemFree(buf[b]));
  printf("captures=%d kernels=%d buffers=%d replays=%d\n", captures, kernels, buffers, replays);
  if (timed) { /* the first five warm the driver's and capguard's tables */
    int skip = captures > 10 ? 5 : 0;
    qsort(took + skip, (size_t)(captures - skip), sizeof *took, by_value);
    printf("median_capture_us=%.1f\n", took[skip + (captures - skip) / 2]);
  }
  free(took);
  return 0;
}
