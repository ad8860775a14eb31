/* The fake driver's functions lines_probe.c and lines_probe.cc call,
 * declared here: the test compiles the probes itself, with no cuda.h. */
#ifndef LINES_PROBE_DRIVER_H
#define LINES_PROBE_DRIVER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
typedef int CUresult;
typedef void *CUstream;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned flags);
CUresult cuDeviceGet(int *dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuStreamCreate(CUstream *s, unsigned flags);
CUresult cuStreamBeginCapture_v2(CUstream s, int mode);
CUresult cuStreamEndCapture(CUstream s, void **graph);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size);
#ifdef __cplusplus
}
#endif

#endif
