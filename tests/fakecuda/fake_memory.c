/* fakecuda: device and pinned host memory, backed by host memory so that copies work.
 * Ground truth: cuMemAlloc, cuMemFree and cuMemHostAlloc follow the prohibition rule;
 * cuMemAllocAsync on the capturing stream and a synchronous cuMemcpyHtoD are allowed. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>

#define FC_TOTAL_MEMORY (80ull << 30)

struct fc_alloc {
  struct fc_handle h;     /* key: the memory's address */
  void *p;
  size_t size;
  int host;
};

static unsigned long long allocated;

static CUresult alloc(void **out, size_t size, int host)
{
  if (size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (size > FC_TOTAL_MEMORY - allocated)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct fc_alloc *a = calloc(1, sizeof(*a));
  void *p = a != NULL ? calloc(1, size) : NULL;
  if (p == NULL) {
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->p = p;
  a->size = size;
  a->host = host;
  allocated += size;
  fc_register(&a->h, p, FC_ALLOC);
  *out = p;
  return CUDA_SUCCESS;
}

static CUresult release(const void *p, int host)
{
  struct fc_alloc *a = (struct fc_alloc *)fc_lookup(p, FC_ALLOC);
  if (a == NULL || a->host != host)
    return CUDA_ERROR_INVALID_VALUE;
  allocated -= a->size;
  fc_unregister(&a->h);
  free(a->p);
  free(a);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS && dptr == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (rc == CUDA_SUCCESS && (rc = alloc(&p, bytesize, 0)) == CUDA_SUCCESS)
    *dptr = (CUdeviceptr)(uintptr_t)p;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS && dptr != 0)
    rc = release((const void *)(uintptr_t)dptr, 0);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (rc == CUDA_SUCCESS && (pp == NULL || (Flags & ~known) != 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    rc = alloc(pp, bytesize, 1);
  FC_END(rc);
}

/* Not measured; freeing pinned memory synchronises, so the fake treats it like cuMemFree. */
FC_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS)
    rc = release(p, 1);
  FC_END(rc);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hs, int ptsz)
{
  CUresult rc = fc_need_ctx();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_stream *st = fc_stream_resolve(hs, ptsz);
  if (st == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (dptr == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  struct fc_capture *cap;
  if ((rc = fc_stream_work(st, &cap)) != CUDA_SUCCESS)
    return rc;
  void *p = NULL;
  if ((rc = alloc(&p, bytesize, 0)) != CUDA_SUCCESS)
    return rc;
  if (cap != NULL && fc_capture_add(cap, CU_GRAPH_NODE_TYPE_MEM_ALLOC) == NULL) {
    release(p, 0);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  FC_BEGIN;
  FC_END(alloc_async(dptr, bytesize, hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
  FC_BEGIN;
  FC_END(alloc_async(dptr, bytesize, hStream, 1));
}

FC_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS && (free_bytes == NULL || total == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    *total = (size_t)FC_TOTAL_MEMORY;
    *free_bytes = (size_t)(FC_TOTAL_MEMORY - allocated);
  }
  FC_END(rc);
}

/* The allocation holding [p, p + n), or NULL. */
struct span { uintptr_t p; size_t n; struct fc_alloc *hit; };
static void find_span(struct fc_handle *h, void *arg)
{
  struct span *s = arg;
  struct fc_alloc *a = (struct fc_alloc *)h;
  uintptr_t base = (uintptr_t)a->p;
  if (s->p >= base && s->p - base <= a->size && s->n <= a->size - (s->p - base))
    s->hit = a;
}

static void *device_span(CUdeviceptr d, size_t n)
{
  struct span s = { (uintptr_t)d, n, NULL };
  fc_foreach(FC_ALLOC, find_span, &s);
  return s.hit != NULL ? (void *)s.p : NULL;
}

static CUresult copy(void *dst, const void *src, size_t n)
{
  if (dst == NULL || src == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  memmove(dst, src, n);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = copy(device_span(dstDevice, ByteCount), srcHost, ByteCount);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = copy(dstHost, device_span(srcDevice, ByteCount), ByteCount);
  FC_END(rc);
}
