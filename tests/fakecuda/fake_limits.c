/* fakecuda: context limits and occupancy.
 * Ground truth (second matrix): cuCtxSetLimit follows the prohibition rule;
 * cuOccupancyMaxActiveBlocksPerMultiprocessor is allowed. Not measured: cuCtxGetLimit is
 * allowed. The limits are kept per process (the fake has one device). */
#include "fake_internal.h"

static size_t limits[CU_LIMIT_MAX] = {
  [CU_LIMIT_STACK_SIZE] = 1024,
  [CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
  [CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
  [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
  [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
  [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32,
  [CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
};

static int limit_known(CUlimit limit)
{
  return (int)limit >= 0 && limit < CU_LIMIT_MAX;
}

FC_EXPORT CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS && (!limit_known(limit) || limit == CU_LIMIT_SHMEM_SIZE ||
                             limit == CU_LIMIT_CIG_ENABLED))
    rc = CUDA_ERROR_INVALID_VALUE;     /* unknown, or query-only */
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS)
    limits[limit] = value;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS && (pvalue == NULL || !limit_known(limit)))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *pvalue = limits[limit];
  FC_END(rc);
}

/* An H100-like SM: 2048 threads, 32 blocks, 233472 bytes of shared memory. */
FC_EXPORT CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                                      int blockSize,
                                                                      size_t dynamicSMemSize)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_function *fn = fc_function_or_kernel(func);
  if (rc == CUDA_SUCCESS && fn == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && (numBlocks == NULL || blockSize <= 0 || blockSize > 1024))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    int by_threads = 2048 / blockSize;
    int by_shmem = dynamicSMemSize == 0 ? 32 : (int)(233472 / dynamicSMemSize);
    int n = by_threads < by_shmem ? by_threads : by_shmem;
    *numBlocks = n < 32 ? n : 32;
  }
  FC_END(rc);
}
