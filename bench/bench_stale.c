/* The stale-pointer check's cost in instructions (bench/run_bench_stale.sh
 * runs it under callgrind, with and without CAPGUARD_STALE=1), over the fake
 * driver: a start-up shaped like an engine's -- BUFFERS buffers, CAPTURES
 * graphs captured, each of KERNELS launches of cg_test_fill over the buffers
 * in turn, each instantiated and kept alive -- then REPLAYS launches of every
 * graph, no memory freed (a healthy run: what the check may cost is its walk
 * at each instantiation and its look at each launch).
 * Usage: bench_stale CUBIN CAPTURES KERNELS BUFFERS REPLAYS */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "capguard/file_read.h"

#include "probe_check.h"

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: bench_stale CUBIN CAPTURES KERNELS BUFFERS REPLAYS\n");
    return 2;
  }
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
  if (!buf || !execs)
    return 1;
  for (int b = 0; b < buffers; b++)
    CHECK(cuMemAlloc(&buf[b], 4096));
  float v = 1.0f;
  int n = 1024;
  for (int c = 0; c < captures; c++) {
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int k = 0; k < kernels; k++) {
      void *params[] = {&buf[(c + k) % buffers], &v, &n};
      CHECK(cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, s, params, NULL));
    }
    CUgraph g;
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuGraphInstantiateWithFlags(&execs[c], g, 0));
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
  return 0;
}
