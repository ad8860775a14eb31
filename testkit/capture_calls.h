/* The driver calls the priming benchmarks make: capture begin and end, graph
 * destroy, module load and unload, as p_<name> pointers, resolved with
 * tk_driver_get (driver_open.h) by capture_calls_resolve() after the driver
 * is open. Static in each program that includes it. */
#ifndef CAPGUARD_TESTKIT_CAPTURE_CALLS_H
#define CAPGUARD_TESTKIT_CAPTURE_CALLS_H

#include <cuda.h>

#include "driver_open.h"

#define CAPTURE_CALLS(X)                                                                       \
  X(cuStreamBeginCapture_v2, CUresult (*)(CUstream, CUstreamCaptureMode))                      \
  X(cuStreamEndCapture, CUresult (*)(CUstream, CUgraph *))                                     \
  X(cuGraphDestroy, CUresult (*)(CUgraph))                                                     \
  X(cuModuleLoadData, CUresult (*)(CUmodule *, const void *))                                  \
  X(cuModuleUnload, CUresult (*)(CUmodule))
#define CAPTURE_CALL_DECLARE(name, type) static __typeof__(type) p_##name;
CAPTURE_CALLS(CAPTURE_CALL_DECLARE)
#define CAPTURE_CALL_RESOLVE(name, type) p_##name = (type)tk_driver_get(#name);
static inline void capture_calls_resolve(void) { CAPTURE_CALLS(CAPTURE_CALL_RESOLVE) }

#endif
