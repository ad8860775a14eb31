/* A libcuda.so.1 whose entry points do nothing and return CUDA_SUCCESS: just
 * enough for bench_hot_calls and bench_instr (set-up, the hot calls) and for the shim
 * to find a driver. Against calls that cost ~2 ns, what bench_hot_calls
 * measures is the wrapper's own cost, without the fake driver's mutex and
 * its noise (run_bench_hot.sh --null). Not a model of anything. */
#include <cuda.h>
#include <stdint.h>

#define NULLDRV_EXPORT __attribute__((visibility("default")))

NULLDRV_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
  (void)flags;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
  *d = ordinal;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)(uintptr_t)0x1000;
  return CUDA_SUCCESS;
}
/* An sm_90 device: a priming file's sm_90 images are preloaded over it. */
NULLDRV_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *d) {
  *d = 0;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
  (void)c;
  return CUDA_SUCCESS;
}
#ifndef NULLDRV_CAPTURES /* null_captures.c's streams are each their own */
NULLDRV_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int flags) {
  (void)flags;
  *s = (CUstream)(uintptr_t)0x2000;
  return CUDA_SUCCESS;
}
#endif
NULLDRV_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int flags) {
  (void)flags;
  *e = (CUevent)(uintptr_t)0x3000;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s) {
  (void)s;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }
NULLDRV_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec g, CUstream s) {
  (void)g, (void)s;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr p) {
  (void)p;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) {
  (void)e;
  (void)s;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuEventQuery(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream s) {
  (void)s;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) {
  (void)image;
  *m = (CUmodule)(uintptr_t)0x4000;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule m) {
  (void)m;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  (void)m;
  (void)name;
  *f = (CUfunction)(uintptr_t)0x5000;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                               void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)s, (void)params,
      (void)extra;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                                                 void **extra) {
  (void)config, (void)f, (void)params, (void)extra;
  return CUDA_SUCCESS;
}
/* For bench_instr's asynchronous copy (cuMemcpyHtoDAsync_v2 into an allocation). */
NULLDRV_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
  (void)size;
  *p = (CUdeviceptr)0x6000;
  return CUDA_SUCCESS;
}
NULLDRV_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t size, CUstream s) {
  (void)dst, (void)src, (void)size, (void)s;
  return CUDA_SUCCESS;
}
