/* fakecuda: page-locked host memory — allocated (cuMemHostAlloc, cuMemAllocHost), freed
 * (cuMemFreeHost), and caller memory registered (cuMemHostRegister/Unregister).
 * Ground truth: cuMemHostAlloc (first matrix), cuMemHostRegister and cuMemAllocHost
 * (second matrix) follow the prohibition rule, and so does cuMemHostUnregister (measured
 * on the H100, driver 580: 900 from the capturing thread, blocking or non-blocking stream,
 * the capture invalidated). Not measured: cuMemFreeHost follows it too (freeing pinned
 * memory synchronises, like cuMemFree). */
#include "fake_internal.h"

static CUresult host_rule(void)
{
  CUresult rc = fc_need_ctx();
  return rc == CUDA_SUCCESS ? fc_refuse_if_prohibited() : rc;
}

FC_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
  FC_BEGIN;
  CUresult rc = host_rule();
  unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (rc == CUDA_SUCCESS && (pp == NULL || (Flags & ~known) != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    rc = fc_mem_alloc(pp, bytesize, FC_MEM_HOST);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
  FC_BEGIN;
  CUresult rc = host_rule();
  if (rc == CUDA_SUCCESS && pp == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    rc = fc_mem_alloc(pp, bytesize, FC_MEM_HOST);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
  FC_BEGIN;
  CUresult rc = host_rule();
  if (rc == CUDA_SUCCESS)
    rc = fc_mem_release(p, FC_MEM_HOST);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
  FC_BEGIN;
  CUresult rc = host_rule();
  unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                   CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (rc == CUDA_SUCCESS && (Flags & ~known) != 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    rc = fc_mem_register(p, bytesize);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
  FC_BEGIN;
  CUresult rc = host_rule();
  if (rc == CUDA_SUCCESS && p == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    rc = fc_mem_release(p, FC_MEM_REGISTERED);
  FC_END(rc);
}
