/* What the hang watch (CAPGUARD_HANG_S) adds to a graph launch on the CPU:
 * a graph of one kernel, captured and instantiated over the fake driver
 * (linked directly; the shim preloaded answers first), launched N times;
 * prints the thread's CPU nanoseconds per launch. bench/run_bench_hang.sh
 * runs it with the watch off and on, and off and off (the A/A). The fake's
 * cuEventRecord stands in for the driver's (the marker recorded after each
 * launch): what a real driver's record costs comes on top (the GPU run's
 * replays a second say the whole of it).
 * Usage: bench_hang_launch N */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "probe_check.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry cg_bench_nop()\n{\n ret;\n}\n";

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000;
  probe_primary_context();
  CUmodule m;
  CUfunction f;
  CUstream s;
  CUgraph g;
  CUgraphExec e;
  CHECK(cuModuleLoadData(&m, ptx));
  CHECK(cuModuleGetFunction(&f, m, "cg_bench_nop"));
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK(cuStreamEndCapture(s, &g));
  CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
  for (int i = 0; i < 1000; i++) /* warm: the markers' events made */
    CHECK(cuGraphLaunch(e, s));
  double t0 = cpu_ns();
  for (long i = 0; i < n; i++)
    CHECK(cuGraphLaunch(e, s));
  double t1 = cpu_ns();
  printf("%.1f\n", (t1 - t0) / (double)n);
  return 0;
}
