/* fakecuda: cuGetProcAddress, the way cudart (and so torch) reaches every driver entry
 * point. Like the real driver it keeps a table of (name, version, per-thread-stream?,
 * implementation) and hands out the newest implementation not newer than the version
 * asked for. Each row is checked at compile time against NVIDIA's own typedef for that
 * name and version (cudaTypedefs.h: PFN_<name>_v<version>[_ptsz]), so a wrong version
 * number or prototype does not build. */
#include "fake_internal.h"

#include <cudaTypedefs.h>
#include <string.h>

/* D: default-stream row; P: per-thread-default-stream (_ptsz) row. */
#define FC_PROC_TABLE(D, P) \
  D(cuInit, 2000, cuInit) \
  D(cuDriverGetVersion, 2020, cuDriverGetVersion) \
  D(cuGetErrorName, 6000, cuGetErrorName) \
  D(cuGetErrorString, 6000, cuGetErrorString) \
  D(cuDeviceGet, 2000, cuDeviceGet) \
  D(cuDeviceGetCount, 2000, cuDeviceGetCount) \
  D(cuDeviceGetName, 2000, cuDeviceGetName) \
  D(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute) \
  D(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain) \
  D(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease) \
  D(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2) \
  D(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset) \
  D(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2) \
  D(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState) \
  D(cuCtxCreate, 3020, cuCtxCreate_v2) \
  D(cuCtxCreate, 11040, cuCtxCreate_v3) \
  D(cuCtxCreate, 12050, cuCtxCreate_v4) \
  D(cuCtxDestroy, 2000, cuCtxDestroy) \
  D(cuCtxDestroy, 4000, cuCtxDestroy_v2) \
  D(cuCtxSetCurrent, 4000, cuCtxSetCurrent) \
  D(cuCtxGetCurrent, 4000, cuCtxGetCurrent) \
  D(cuCtxGetDevice, 2000, cuCtxGetDevice) \
  D(cuCtxGetDevice, 13000, cuCtxGetDevice_v2) \
  D(cuCtxSynchronize, 2000, cuCtxSynchronize) \
  D(cuCtxSynchronize, 13000, cuCtxSynchronize_v2) \
  D(cuCtxSetLimit, 3010, cuCtxSetLimit) \
  D(cuCtxGetLimit, 3010, cuCtxGetLimit) \
  D(cuStreamCreate, 2000, cuStreamCreate) \
  D(cuStreamDestroy, 2000, cuStreamDestroy) \
  D(cuStreamDestroy, 4000, cuStreamDestroy_v2) \
  D(cuStreamSynchronize, 2000, cuStreamSynchronize) \
  P(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz) \
  D(cuStreamQuery, 2000, cuStreamQuery) \
  P(cuStreamQuery, 7000, cuStreamQuery_ptsz) \
  D(cuStreamIsCapturing, 10000, cuStreamIsCapturing) \
  P(cuStreamIsCapturing, 10000, cuStreamIsCapturing_ptsz) \
  D(cuStreamGetCaptureInfo, 10010, cuStreamGetCaptureInfo) \
  P(cuStreamGetCaptureInfo, 10010, cuStreamGetCaptureInfo_ptsz) \
  D(cuStreamGetCaptureInfo, 11030, cuStreamGetCaptureInfo_v2) \
  P(cuStreamGetCaptureInfo, 11030, cuStreamGetCaptureInfo_v2_ptsz) \
  D(cuStreamGetCaptureInfo, 12030, cuStreamGetCaptureInfo_v3) \
  P(cuStreamGetCaptureInfo, 12030, cuStreamGetCaptureInfo_v3_ptsz) \
  D(cuStreamBeginCapture, 10000, cuStreamBeginCapture) \
  P(cuStreamBeginCapture, 10000, cuStreamBeginCapture_ptsz) \
  D(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2) \
  P(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2_ptsz) \
  D(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph) \
  P(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph_ptsz) \
  D(cuStreamEndCapture, 10000, cuStreamEndCapture) \
  P(cuStreamEndCapture, 10000, cuStreamEndCapture_ptsz) \
  D(cuThreadExchangeStreamCaptureMode, 10010, cuThreadExchangeStreamCaptureMode) \
  D(cuModuleLoad, 2000, cuModuleLoad) \
  D(cuModuleLoadData, 2000, cuModuleLoadData) \
  D(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx) \
  D(cuModuleLoadFatBinary, 2000, cuModuleLoadFatBinary) \
  D(cuModuleUnload, 2000, cuModuleUnload) \
  D(cuModuleGetFunction, 2000, cuModuleGetFunction) \
  D(cuModuleGetGlobal, 3020, cuModuleGetGlobal_v2) \
  D(cuLibraryLoadData, 12000, cuLibraryLoadData) \
  D(cuLibraryLoadFromFile, 12000, cuLibraryLoadFromFile) \
  D(cuLibraryUnload, 12000, cuLibraryUnload) \
  D(cuLibraryGetKernel, 12000, cuLibraryGetKernel) \
  D(cuLibraryGetModule, 12000, cuLibraryGetModule) \
  D(cuKernelGetFunction, 12000, cuKernelGetFunction) \
  D(cuFuncGetName, 12030, cuFuncGetName) \
  D(cuFuncGetParamInfo, 12040, cuFuncGetParamInfo) \
  D(cuFuncGetModule, 11000, cuFuncGetModule) \
  D(cuFuncGetAttribute, 2020, cuFuncGetAttribute) \
  D(cuFuncSetAttribute, 9000, cuFuncSetAttribute) \
  D(cuFuncSetCacheConfig, 3000, cuFuncSetCacheConfig) \
  D(cuLaunchKernel, 4000, cuLaunchKernel) \
  P(cuLaunchKernel, 7000, cuLaunchKernel_ptsz) \
  D(cuLaunchKernelEx, 11060, cuLaunchKernelEx) \
  P(cuLaunchKernelEx, 11060, cuLaunchKernelEx_ptsz) \
  D(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel) \
  P(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel_ptsz) \
  D(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2) \
  P(cuMemcpyHtoDAsync, 7000, cuMemcpyHtoDAsync_v2_ptsz) \
  D(cuLogsRegisterCallback, 12090, cuLogsRegisterCallback) \
  D(cuPointerGetAttribute, 4000, cuPointerGetAttribute) \
  D(cuStreamGetFlags, 5050, cuStreamGetFlags) \
  P(cuStreamGetFlags, 7000, cuStreamGetFlags_ptsz) \
  D(cuLogsUnregisterCallback, 12090, cuLogsUnregisterCallback) \
  D(cuLaunchHostFunc, 10000, cuLaunchHostFunc) \
  P(cuLaunchHostFunc, 10000, cuLaunchHostFunc_ptsz) \
  D(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  D(cuGraphCreate, 10000, cuGraphCreate) \
  D(cuGraphDestroy, 10000, cuGraphDestroy) \
  D(cuGraphGetNodes, 10000, cuGraphGetNodes) \
  D(cuGraphNodeGetType, 10000, cuGraphNodeGetType) \
  D(cuGraphKernelNodeGetParams, 10000, cuGraphKernelNodeGetParams) \
  D(cuGraphKernelNodeGetParams, 12000, cuGraphKernelNodeGetParams_v2) \
  D(cuGraphAddKernelNode, 10000, cuGraphAddKernelNode) \
  D(cuGraphMemcpyNodeGetParams, 10000, cuGraphMemcpyNodeGetParams) \
  D(cuGraphMemsetNodeGetParams, 10000, cuGraphMemsetNodeGetParams) \
  D(cuGraphAddKernelNode, 12000, cuGraphAddKernelNode_v2) \
  D(cuGraphInstantiate, 10000, cuGraphInstantiate) \
  D(cuGraphInstantiate, 11000, cuGraphInstantiate_v2) \
  D(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags) \
  D(cuGraphLaunch, 10000, cuGraphLaunch) \
  P(cuGraphLaunch, 10000, cuGraphLaunch_ptsz) \
  D(cuGraphExecDestroy, 10000, cuGraphExecDestroy) \
  D(cuMemAlloc, 3020, cuMemAlloc_v2) \
  D(cuMemAllocPitch, 3020, cuMemAllocPitch_v2) \
  D(cuMemAllocManaged, 6000, cuMemAllocManaged) \
  D(cuMemFree, 3020, cuMemFree_v2) \
  D(cuMemAllocHost, 3020, cuMemAllocHost_v2) \
  D(cuMemHostRegister, 6050, cuMemHostRegister_v2) \
  D(cuMemHostUnregister, 4000, cuMemHostUnregister) \
  D(cuMemHostAlloc, 2020, cuMemHostAlloc) \
  D(cuMemFreeHost, 2000, cuMemFreeHost) \
  D(cuMemAllocAsync, 11020, cuMemAllocAsync) \
  P(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz) \
  D(cuMemFreeAsync, 11020, cuMemFreeAsync) \
  P(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz) \
  D(cuMemsetD8, 3020, cuMemsetD8_v2) \
  D(cuMemGetInfo, 3020, cuMemGetInfo_v2) \
  D(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2) \
  D(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2) \
  D(cuMemAlloc, 2000, cuMemAlloc) \
  D(cuMemFree, 2000, cuMemFree) \
  D(cuArrayCreate, 3020, cuArrayCreate_v2) \
  D(cuArrayDestroy, 2000, cuArrayDestroy) \
  D(cuMemcpy, 4000, cuMemcpy) \
  D(cuMemcpyHtoD, 2000, cuMemcpyHtoD) \
  D(cuMemcpyDtoH, 2000, cuMemcpyDtoH) \
  D(cuMemcpyDtoD, 2000, cuMemcpyDtoD) \
  D(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2) \
  D(cuMemcpyPeer, 4000, cuMemcpyPeer) \
  D(cuMemcpyHtoA, 2000, cuMemcpyHtoA) \
  D(cuMemcpyHtoA, 3020, cuMemcpyHtoA_v2) \
  D(cuMemcpyAtoH, 2000, cuMemcpyAtoH) \
  D(cuMemcpyAtoH, 3020, cuMemcpyAtoH_v2) \
  D(cuMemcpyDtoA, 2000, cuMemcpyDtoA) \
  D(cuMemcpyDtoA, 3020, cuMemcpyDtoA_v2) \
  D(cuMemcpyAtoD, 2000, cuMemcpyAtoD) \
  D(cuMemcpyAtoD, 3020, cuMemcpyAtoD_v2) \
  D(cuMemcpyAtoA, 2000, cuMemcpyAtoA) \
  D(cuMemcpyAtoA, 3020, cuMemcpyAtoA_v2) \
  D(cuMemcpy2D, 2000, cuMemcpy2D) \
  D(cuMemcpy2D, 3020, cuMemcpy2D_v2) \
  D(cuMemcpy2DUnaligned, 2000, cuMemcpy2DUnaligned) \
  D(cuMemcpy2DUnaligned, 3020, cuMemcpy2DUnaligned_v2) \
  D(cuMemcpy3D, 2000, cuMemcpy3D) \
  D(cuMemcpy3D, 3020, cuMemcpy3D_v2) \
  D(cuMemcpy3DPeer, 4000, cuMemcpy3DPeer) \
  D(cuMemsetD8, 2000, cuMemsetD8) \
  D(cuMemsetD16, 2000, cuMemsetD16) \
  D(cuMemsetD16, 3020, cuMemsetD16_v2) \
  D(cuMemsetD32, 2000, cuMemsetD32) \
  D(cuMemsetD32, 3020, cuMemsetD32_v2) \
  D(cuMemsetD2D8, 2000, cuMemsetD2D8) \
  D(cuMemsetD2D8, 3020, cuMemsetD2D8_v2) \
  D(cuMemsetD2D16, 2000, cuMemsetD2D16) \
  D(cuMemsetD2D16, 3020, cuMemsetD2D16_v2) \
  D(cuMemsetD2D32, 2000, cuMemsetD2D32) \
  D(cuMemsetD2D32, 3020, cuMemsetD2D32_v2) \
  D(cuMemcpyAsync, 4000, cuMemcpyAsync) \
  P(cuMemcpyAsync, 7000, cuMemcpyAsync_ptsz) \
  D(cuMemcpyHtoDAsync, 2000, cuMemcpyHtoDAsync) \
  D(cuMemcpyDtoHAsync, 2000, cuMemcpyDtoHAsync) \
  D(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2) \
  P(cuMemcpyDtoHAsync, 7000, cuMemcpyDtoHAsync_v2_ptsz) \
  D(cuMemcpyDtoDAsync, 3000, cuMemcpyDtoDAsync) \
  D(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2) \
  P(cuMemcpyDtoDAsync, 7000, cuMemcpyDtoDAsync_v2_ptsz) \
  D(cuMemcpyPeerAsync, 4000, cuMemcpyPeerAsync) \
  P(cuMemcpyPeerAsync, 7000, cuMemcpyPeerAsync_ptsz) \
  D(cuMemcpyHtoAAsync, 2000, cuMemcpyHtoAAsync) \
  D(cuMemcpyHtoAAsync, 3020, cuMemcpyHtoAAsync_v2) \
  P(cuMemcpyHtoAAsync, 7000, cuMemcpyHtoAAsync_v2_ptsz) \
  D(cuMemcpyAtoHAsync, 2000, cuMemcpyAtoHAsync) \
  D(cuMemcpyAtoHAsync, 3020, cuMemcpyAtoHAsync_v2) \
  P(cuMemcpyAtoHAsync, 7000, cuMemcpyAtoHAsync_v2_ptsz) \
  D(cuMemcpy2DAsync, 2000, cuMemcpy2DAsync) \
  D(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2) \
  P(cuMemcpy2DAsync, 7000, cuMemcpy2DAsync_v2_ptsz) \
  D(cuMemcpy3DAsync, 2000, cuMemcpy3DAsync) \
  D(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync_v2) \
  P(cuMemcpy3DAsync, 7000, cuMemcpy3DAsync_v2_ptsz) \
  D(cuMemcpy3DPeerAsync, 4000, cuMemcpy3DPeerAsync) \
  P(cuMemcpy3DPeerAsync, 7000, cuMemcpy3DPeerAsync_ptsz) \
  D(cuMemsetD8Async, 3020, cuMemsetD8Async) \
  P(cuMemsetD8Async, 7000, cuMemsetD8Async_ptsz) \
  D(cuMemsetD16Async, 3020, cuMemsetD16Async) \
  P(cuMemsetD16Async, 7000, cuMemsetD16Async_ptsz) \
  D(cuMemsetD32Async, 3020, cuMemsetD32Async) \
  P(cuMemsetD32Async, 7000, cuMemsetD32Async_ptsz) \
  D(cuMemsetD2D8Async, 3020, cuMemsetD2D8Async) \
  P(cuMemsetD2D8Async, 7000, cuMemsetD2D8Async_ptsz) \
  D(cuMemsetD2D16Async, 3020, cuMemsetD2D16Async) \
  P(cuMemsetD2D16Async, 7000, cuMemsetD2D16Async_ptsz) \
  D(cuMemsetD2D32Async, 3020, cuMemsetD2D32Async) \
  P(cuMemsetD2D32Async, 7000, cuMemsetD2D32Async_ptsz) \
  D(cuEventCreate, 2000, cuEventCreate) \
  D(cuEventRecord, 2000, cuEventRecord) \
  P(cuEventRecord, 7000, cuEventRecord_ptsz) \
  D(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags) \
  P(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags_ptsz) \
  D(cuStreamWaitEvent, 3020, cuStreamWaitEvent) \
  P(cuStreamWaitEvent, 7000, cuStreamWaitEvent_ptsz) \
  D(cuEventQuery, 2000, cuEventQuery) \
  D(cuEventSynchronize, 2000, cuEventSynchronize) \
  D(cuEventDestroy, 2000, cuEventDestroy) \
  D(cuEventDestroy, 4000, cuEventDestroy_v2) \
  D(cuGetProcAddress, 11030, cuGetProcAddress) \
  D(cuGetProcAddress, 12000, cuGetProcAddress_v2)

#define FC_SAME_TYPE(sym, pfn) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&sym), pfn), \
                 #sym " does not have the prototype of " #pfn);
#define FC_CHECK_D(name, ver, sym) FC_SAME_TYPE(sym, PFN_##name##_v##ver)
#define FC_CHECK_P(name, ver, sym) FC_SAME_TYPE(sym, PFN_##name##_v##ver##_ptsz)
FC_PROC_TABLE(FC_CHECK_D, FC_CHECK_P)

struct fc_proc {
  const char *name;
  int version;
  int ptsz;
  void *fn;
};

#define FC_ROW_D(name, ver, sym) { #name, ver, 0, (void *)&sym },
#define FC_ROW_P(name, ver, sym) { #name, ver, 1, (void *)&sym },
static const struct fc_proc procs[] = { FC_PROC_TABLE(FC_ROW_D, FC_ROW_P) };

/* The newest row for name with version <= want and the given stream flavour. */
static const struct fc_proc *newest(const char *name, int want, int ptsz, int *known)
{
  const struct fc_proc *best = NULL;
  for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
    if (strcmp(procs[i].name, name) != 0)
      continue;
    *known = 1;
    if (procs[i].ptsz == ptsz && procs[i].version <= want &&
        (best == NULL || procs[i].version > best->version))
      best = &procs[i];
  }
  return best;
}

static CUresult proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
  const cuuint64_t known_flags = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if (symbol == NULL || pfn == NULL || (flags & ~known_flags) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  int known = 0;
  const struct fc_proc *p = NULL;
  /* Per-thread flavour where the entry point has one, else the only flavour there is. */
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    p = newest(symbol, cudaVersion, 1, &known);
  if (p == NULL)
    p = newest(symbol, cudaVersion, 0, &known);
  if (p == NULL) {
    if (status != NULL)
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                      : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = p->fn;
  if (status != NULL)
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                            cuuint64_t flags)
{
  FC_BEGIN;
  FC_END(proc_address(symbol, pfn, cudaVersion, flags, NULL));
}

FC_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                               cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *symbolStatus)
{
  FC_BEGIN;
  FC_END(proc_address(symbol, pfn, cudaVersion, flags, symbolStatus));
}
