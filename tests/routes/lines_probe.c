/* One capture broken by an allocation, for test_frame_lines.py: compiled by
 * the test itself with -g as a PIE and a non-PIE executable and stripped, so
 * that capguard's stderr line names this file's lines (or, stripped, the
 * object and offset). Calls the fake driver's exported functions (declared
 * in lines_probe_driver.h: no cuda.h needed to build it at test time). The
 * markers at the ends of lines are what the test looks for. */
#include <stdio.h>

#include "lines_probe_driver.h"

static CUstream stream;

__attribute__((noinline)) static void begin(void) {
  CUresult rc = cuStreamBeginCapture_v2(stream, 0); /* LINE:begin */
  printf("begin_result=%d\n", rc);
}

__attribute__((noinline)) static void allocate(void) {
  CUdeviceptr p = 0;
  CUresult rc = cuMemAlloc_v2(&p, 4096); /* LINE:alloc */
  printf("alloc_result=%d\n", rc);
}

int main(void) {
  int dev = 0;
  CUcontext ctx = NULL;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuStreamCreate(&stream, 0)) {
    fprintf(stderr, "lines_probe: no driver\n");
    return 2;
  }
  begin();
  allocate();
  void *graph = NULL;
  printf("end_result=%d\n", cuStreamEndCapture(stream, &graph));
  return 0;
}
