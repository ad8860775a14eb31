/* fakecuda: the legacy stream while a capture is open, and the launch and copy entry
 * points of the third matrix.
 * Ground truth (third matrix, driver-semantics.md): work on the legacy stream (a launch
 * on stream 0, a synchronous cuMemcpyHtoD, a synchronous cuMemsetD8) is refused with 906
 * (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) and the capture invalidated whenever a *blocking*
 * stream (created with flags 0) of the context captures, in every mode and from every
 * thread. When only non-blocking streams capture, the same calls succeed and run at once,
 * outside the graph. CU_STREAM_PER_THREAD is not the legacy stream: always fine.
 * (cuMemcpyHtoDAsync, captured from pageable memory as a memcpy node, is with the other
 * copies: fake_copies.c.)
 * Not measured: a capture on the per-thread default stream is counted as blocking (CUDA
 * documents that stream as synchronising with the legacy one). */
#include "fake_internal.h"

static int blocking(const struct fc_stream *st)
{
  return st->special == 2 || (st->special == 0 && (st->flags & CU_STREAM_NON_BLOCKING) == 0);
}

CUresult fc_legacy_work(const struct fc_stream *st)
{
  if (st == NULL || st->special != 1)
    return CUDA_SUCCESS;
  struct fc_ctx *ctx = fc_current_ctx();
  int refused = 0;
  for (struct fc_capture *c = fc_captures_head(); c != NULL; c = c->next) {
    if (c->ctx == ctx && blocking(c->stream)) {
      fc_invalidate(c);
      refused = 1;
    }
  }
  if (!refused)
    return CUDA_SUCCESS;
  fc_logs_cause("Call cannot be made against CU_STREAM_LEGACY while a blocking stream in the same "
                "context is capturing");
  return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

/* cuLaunchKernelEx: the configuration's grid, block, shared memory and stream; the
 * attributes are accepted and not modelled. */
static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, int ptsz, void **params, void **extra)
{
  if (config == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = { config->gridDimX, config->gridDimY, config->gridDimZ };
  const unsigned block[3] = { config->blockDimX, config->blockDimY, config->blockDimZ };
  return fc_launch_kernel(f, grid, block, config->sharedMemBytes, config->hStream, ptsz, params, extra);
}

FC_EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                            void **kernelParams, void **extra)
{
  FC_BEGIN;
  FC_END(launch_ex(config, f, 0, kernelParams, extra));
}

FC_EXPORT CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                                 void **kernelParams, void **extra)
{
  FC_BEGIN;
  FC_END(launch_ex(config, f, 1, kernelParams, extra));
}

#define FC_COOP_PARAMS                                                                       \
  CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,        \
      unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,               \
      unsigned int sharedMemBytes, CUstream hStream, void **kernelParams

FC_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel(FC_COOP_PARAMS)
{
  FC_BEGIN;
  const unsigned grid[3] = { gridDimX, gridDimY, gridDimZ };
  const unsigned block[3] = { blockDimX, blockDimY, blockDimZ };
  FC_END(fc_launch_kernel(f, grid, block, sharedMemBytes, hStream, 0, kernelParams, NULL));
}

FC_EXPORT CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(FC_COOP_PARAMS)
{
  FC_BEGIN;
  const unsigned grid[3] = { gridDimX, gridDimY, gridDimZ };
  const unsigned block[3] = { blockDimX, blockDimY, blockDimZ };
  FC_END(fc_launch_kernel(f, grid, block, sharedMemBytes, hStream, 1, kernelParams, NULL));
}

/* A query, allowed mid-capture: the flags the stream was created with. */
static CUresult stream_flags(CUstream hStream, int ptsz, unsigned int *flags)
{
  CUresult rc = fc_need_ctx();
  struct fc_stream *st = rc == CUDA_SUCCESS ? fc_stream_resolve(hStream, ptsz) : NULL;
  if (rc == CUDA_SUCCESS && st == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS && flags == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && st->cap != NULL) {
    /* Measured (H100, driver 580): of a capturing stream, in every mode, the
     * call is refused with 900 and the capture invalidated. */
    fc_invalidate(st->cap);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (rc == CUDA_SUCCESS)
    *flags = st->flags;
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
  FC_BEGIN;
  FC_END(stream_flags(hStream, 0, flags));
}

FC_EXPORT CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
  FC_BEGIN;
  FC_END(stream_flags(hStream, 1, flags));
}
