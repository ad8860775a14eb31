/* CHECK for the route probes (copy_probe.c, escape_probe.c, hang_probe.c, ...): a set-up call that
 * fails stops the probe with exit 2 and a line naming the program and the call,
 * so a test tells a broken set-up from a result. */
#ifndef ROUTES_PROBE_CHECK_H
#define ROUTES_PROBE_CHECK_H

#include <cuda.h>
#include <errno.h> /* program_invocation_short_name (the build defines _GNU_SOURCE) */
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "%s: %s returned %d\n", program_invocation_short_name, #call, (int)r_);      \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

/* cuInit, device 0's primary context retained and made current: every
 * probe's first lines. */
static inline CUcontext probe_primary_context(void) {
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  return ctx;
}

#endif
