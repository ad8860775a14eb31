/* What priming costs, measured in one process per run (bench/run_bench_priming.sh
 * runs it under each configuration and takes medians):
 *   begin_first   the first capture begin on the context (capguard preloads here)
 *   begin_next    a later capture begin (nothing to preload)
 *   load_mid      a cuModuleLoadData made mid-capture (first one: served from the
 *                 pool when primed; otherwise the driver's load, plus capguard's
 *                 report and recording when it runs under capguard)
 *   load_plain    the same image loaded with nothing capturing (the driver's own cost)
 * Usage: bench_priming IMAGE... (the first image is the one loaded mid-capture).
 * Prints "name ns" lines. */
#include <cuda.h>

#include "capguard/clock.h"
#include "capguard/file_read.h"
#include "capture_calls.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static double now_ns(void) { return (double)cg_monotonic_ns(); }

int main(int argc, char **argv) {
  /* Resolved with dlsym on libcuda.so.1 (the route torch's driver table
   * takes), so the same binary measures the fake driver and the real one. */
  if (tk_driver_open_dlsym("bench") != 0) {
    fprintf(stderr, "bench: %s\n", dlerror());
    return 2;
  }
  capture_calls_resolve();
  if (argc < 2) {
    fprintf(stderr, "usage: bench_priming IMAGE...\n");
    return 2;
  }
  size_t image_size;
  void *image = cg_read_file(argv[1], (size_t)1 << 30, &image_size);
  if (!image)
    return 2;
  CUstream s;
  CUgraph g;
  CUmodule m;
  if (tk_driver_setup(&s))
    return 2;
  double t0 = now_ns();
  p_cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  double t1 = now_ns();
  CUresult r = p_cuModuleLoadData(&m, image);
  double t2 = now_ns();
  p_cuStreamEndCapture(s, &g);
  if (g)
    p_cuGraphDestroy(g);
  if (r == CUDA_SUCCESS)
    p_cuModuleUnload(m);
  double t3 = now_ns();
  p_cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  double t4 = now_ns();
  p_cuStreamEndCapture(s, &g);
  if (g)
    p_cuGraphDestroy(g);
  double t5 = now_ns();
  r = p_cuModuleLoadData(&m, image);
  double t6 = now_ns();
  if (r == CUDA_SUCCESS)
    p_cuModuleUnload(m);
  printf("begin_first %.0f\nload_mid %.0f\nbegin_next %.0f\nload_plain %.0f\n", t1 - t0, t2 - t1, t4 - t3,
         t6 - t5);
  return 0;
}
