/* fakecuda: device memory (plain, pitched, managed, stream-ordered), backed by host
 * memory so that copies work; the allocation registry shared with fake_hostmem.c.
 * Ground truth: cuMemAlloc and cuMemFree follow the prohibition rule (first matrix);
 * cuMemAllocManaged too (second matrix); cuMemAllocPitch is not measured and follows it
 * like cuMemAlloc. cuMemAllocAsync / cuMemFreeAsync on the capturing stream, a synchronous
 * cuMemcpyHtoD / cuMemcpyDtoH and cuMemsetD8 are allowed. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FC_TOTAL_MEMORY (80ull << 30)
#define FC_PITCH_ALIGN 512

struct fc_alloc {
  struct fc_handle h;     /* key: the memory's address */
  void *p;
  size_t size;
  enum fc_mem_kind kind;
  int low;                /* mapped below 4 GiB, for the 32-bit v1 entry points (munmap) */
  unsigned long long buffer_id;   /* CU_POINTER_ATTRIBUTE_BUFFER_ID: never the same twice */
};

static unsigned long long allocated;
static unsigned long long last_buffer_id;

/* The last device block freed, kept for the next allocation of the same size: a real
 * allocator hands an address freed back out again, and that reuse is what makes a graph
 * captured with the old address write into the new owner's memory. */
static void *recycled;
static size_t recycled_size;

static void *device_block(size_t size)
{
  if (recycled != NULL && recycled_size == size) {
    void *p = recycled;
    recycled = NULL;
    memset(p, 0, size);
    return p;
  }
  return calloc(1, size);
}

static void device_block_free(void *p, size_t size)
{
  free(recycled);
  recycled = p;
  recycled_size = size;
}

CUresult fc_mem_alloc(void **out, size_t size, enum fc_mem_kind kind)
{
  if (size == 0 || kind == FC_MEM_REGISTERED)
    return CUDA_ERROR_INVALID_VALUE;
  if (size > FC_TOTAL_MEMORY - allocated)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct fc_alloc *a = calloc(1, sizeof(*a));
  void *p = a == NULL ? NULL : kind == FC_MEM_DEVICE ? device_block(size) : calloc(1, size);
  if (p == NULL) {
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->p = p;
  a->size = size;
  a->kind = kind;
  a->buffer_id = ++last_buffer_id;
  allocated += size;
  fc_register(&a->h, p, FC_ALLOC);
  *out = p;
  return CUDA_SUCCESS;
}

/* Device memory a 32-bit (v1) device pointer can address: mapped below 4 GiB
 * (MAP_32BIT), zeroed, freed by fc_mem_release like any device allocation. */
CUresult fc_mem_alloc_low(void **out, size_t size)
{
  if (size == 0 || size > 0x10000000u)
    return CUDA_ERROR_INVALID_VALUE;
  if (size > FC_TOTAL_MEMORY - allocated)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct fc_alloc *a = calloc(1, sizeof(*a));
  void *p = a != NULL ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0)
                      : MAP_FAILED;
  if (p == MAP_FAILED || (uintptr_t)p + size > 0xffffffffu) {
    if (p != MAP_FAILED)
      munmap(p, size);
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->p = p;
  a->size = size;
  a->kind = FC_MEM_DEVICE;
  a->low = 1;
  a->buffer_id = ++last_buffer_id;
  allocated += size;
  fc_register(&a->h, p, FC_ALLOC);
  *out = p;
  return CUDA_SUCCESS;
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

static struct fc_alloc *alloc_holding(const void *p, size_t n)
{
  struct span s = { (uintptr_t)p, n, NULL };
  fc_foreach(FC_ALLOC, find_span, &s);
  return s.hit;
}

CUresult fc_mem_register(void *p, size_t size)
{
  if (p == NULL || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (alloc_holding(p, 1) != NULL || alloc_holding((const char *)p + size - 1, 1) != NULL)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  struct fc_alloc *a = calloc(1, sizeof(*a));
  if (a == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  a->p = p;
  a->size = size;
  a->kind = FC_MEM_REGISTERED;
  a->buffer_id = ++last_buffer_id;
  fc_register(&a->h, p, FC_ALLOC);
  return CUDA_SUCCESS;
}

CUresult fc_mem_release(const void *p, enum fc_mem_kind kind)
{
  struct fc_alloc *a = (struct fc_alloc *)fc_lookup(p, FC_ALLOC);
  if (a == NULL || a->kind != kind)
    return kind == FC_MEM_REGISTERED ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
                                     : CUDA_ERROR_INVALID_VALUE;
  fc_unregister(&a->h);
  if (kind != FC_MEM_REGISTERED) {
    allocated -= a->size;
    if (a->low)
      munmap(a->p, a->size);
    else if (kind == FC_MEM_DEVICE)
      device_block_free(a->p, a->size);
    else
      free(a->p);
  }
  free(a);
  return CUDA_SUCCESS;
}

/* The prohibition rule, after the context check: what every synchronous allocation and
 * free of this file does first. */
static CUresult sync_mem_rule(void)
{
  CUresult rc = fc_need_ctx();
  return rc == CUDA_SUCCESS ? fc_refuse_if_prohibited() : rc;
}

FC_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
  FC_BEGIN;
  CUresult rc = sync_mem_rule();
  if (rc == CUDA_SUCCESS && dptr == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (rc == CUDA_SUCCESS && (rc = fc_mem_alloc(&p, bytesize, FC_MEM_DEVICE)) == CUDA_SUCCESS)
    *dptr = (CUdeviceptr)(uintptr_t)p;
  FC_END(rc);
}

/* The 32-bit v1 cuMemAlloc and cuMemFree (libcuda still exports them): memory below
 * 4 GiB, so that the v1 copies and memsets can address it. */
FC_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
  FC_BEGIN;
  CUresult rc = sync_mem_rule();
  if (rc == CUDA_SUCCESS && dptr == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (rc == CUDA_SUCCESS && (rc = fc_mem_alloc_low(&p, bytesize)) == CUDA_SUCCESS)
    *dptr = (CUdeviceptr_v1)(uintptr_t)p;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr)
{
  FC_BEGIN;
  CUresult rc = sync_mem_rule();
  if (rc == CUDA_SUCCESS && dptr != 0)
    rc = fc_mem_release((const void *)(uintptr_t)dptr, FC_MEM_DEVICE);
  FC_END(rc);
}

/* Rows padded to a multiple of FC_PITCH_ALIGN; element sizes 4, 8 or 16 as documented. */
FC_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                              size_t Height, unsigned int ElementSizeBytes)
{
  FC_BEGIN;
  CUresult rc = sync_mem_rule();
  if (rc == CUDA_SUCCESS && (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
                             (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) ||
                             WidthInBytes > FC_TOTAL_MEMORY))
    rc = CUDA_ERROR_INVALID_VALUE;
  size_t pitch = (WidthInBytes + FC_PITCH_ALIGN - 1) / FC_PITCH_ALIGN * FC_PITCH_ALIGN;
  if (rc == CUDA_SUCCESS && Height > FC_TOTAL_MEMORY / pitch)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  void *p = NULL;
  if (rc == CUDA_SUCCESS && (rc = fc_mem_alloc(&p, pitch * Height, FC_MEM_DEVICE)) == CUDA_SUCCESS) {
    *dptr = (CUdeviceptr)(uintptr_t)p;
    *pPitch = pitch;
  }
  FC_END(rc);
}

/* Managed memory is device memory to the fake (freed with cuMemFree). */
FC_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
  FC_BEGIN;
  CUresult rc = sync_mem_rule();
  if (rc == CUDA_SUCCESS && (dptr == NULL || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)))
    rc = CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (rc == CUDA_SUCCESS && (rc = fc_mem_alloc(&p, bytesize, FC_MEM_DEVICE)) == CUDA_SUCCESS)
    *dptr = (CUdeviceptr)(uintptr_t)p;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
  FC_BEGIN;
  CUresult rc = sync_mem_rule();
  if (rc == CUDA_SUCCESS && dptr != 0)
    rc = fc_mem_release((const void *)(uintptr_t)dptr, FC_MEM_DEVICE);
  FC_END(rc);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hs, int ptsz)
{
  struct fc_stream *st;
  CUresult rc = fc_stream_in_ctx(hs, ptsz, &st);
  if (rc != CUDA_SUCCESS)
    return rc;
  if (dptr == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  struct fc_capture *cap;
  if ((rc = fc_stream_work(st, &cap)) != CUDA_SUCCESS)
    return rc;
  void *p = NULL;
  if ((rc = fc_mem_alloc(&p, bytesize, FC_MEM_DEVICE)) != CUDA_SUCCESS)
    return rc;
  if (cap != NULL && fc_capture_add(cap, CU_GRAPH_NODE_TYPE_MEM_ALLOC) == NULL) {
    fc_mem_release(p, FC_MEM_DEVICE);
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

/* Stream-ordered free: all work is done at once, so the memory goes now; a capture gets
 * a free node for it. */
static CUresult free_async(CUdeviceptr dptr, CUstream hs, int ptsz)
{
  struct fc_stream *st;
  CUresult rc = fc_stream_in_ctx(hs, ptsz, &st);
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_alloc *a = (struct fc_alloc *)fc_lookup((const void *)(uintptr_t)dptr, FC_ALLOC);
  if (a == NULL || a->kind != FC_MEM_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  struct fc_capture *cap;
  if ((rc = fc_stream_work(st, &cap)) != CUDA_SUCCESS)
    return rc;
  if (cap != NULL && fc_capture_add(cap, CU_GRAPH_NODE_TYPE_MEM_FREE) == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  return fc_mem_release(a->p, FC_MEM_DEVICE);
}

FC_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
  FC_BEGIN;
  FC_END(free_async(dptr, hStream, 0));
}

FC_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
  FC_BEGIN;
  FC_END(free_async(dptr, hStream, 1));
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

static void *device_span(CUdeviceptr d, size_t n)
{
  if (alloc_holding((const void *)(uintptr_t)d, n) != NULL)
    return (void *)(uintptr_t)d;
  return n > 0 && fc_vmm_mapped((uintptr_t)d, n) ? (void *)(uintptr_t)d : NULL;   /* mapped pieces */
}

void *fc_mem_span(CUdeviceptr d, size_t n) { return device_span(d, n); }

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
    rc = fc_legacy_work(fc_stream_resolve(NULL, 0));   /* synchronous: the legacy stream */
  if (rc == CUDA_SUCCESS)
    rc = copy(device_span(dstDevice, ByteCount), srcHost, ByteCount);
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = fc_legacy_work(fc_stream_resolve(NULL, 0));   /* synchronous: the legacy stream */
  if (rc == CUDA_SUCCESS)
    rc = copy(dstHost, device_span(srcDevice, ByteCount), ByteCount);
  FC_END(rc);
}

/* Synchronous, on the legacy stream: refused with 906 while a blocking stream captures
 * (third matrix), run at once otherwise. */
FC_EXPORT CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = fc_legacy_work(fc_stream_resolve(NULL, 0));   /* synchronous: the legacy stream */
  void *dst = device_span(dstDevice, N);
  if (rc == CUDA_SUCCESS && dst == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    memset(dst, uc, N);
  FC_END(rc);
}

/* A query, allowed mid-capture. Modelled: CU_POINTER_ATTRIBUTE_MEMORY_TYPE (device for
 * device and managed allocations, host for page-locked host memory, allocated or
 * registered), and the allocation holding ptr: RANGE_START_ADDR, RANGE_SIZE and BUFFER_ID
 * (a number no other allocation of the process gets, even at the same address). Pageable
 * host memory the driver never saw, or freed memory, is CUDA_ERROR_INVALID_VALUE, as on
 * the real driver. */
FC_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS && (data == NULL || (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE &&
                                              attribute != CU_POINTER_ATTRIBUTE_BUFFER_ID &&
                                              attribute != CU_POINTER_ATTRIBUTE_RANGE_START_ADDR &&
                                              attribute != CU_POINTER_ATTRIBUTE_RANGE_SIZE)))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_alloc *a = rc == CUDA_SUCCESS ? alloc_holding((const void *)(uintptr_t)ptr, 1) : NULL;
  uintptr_t vstart = 0;
  size_t vsize = 0;
  unsigned long long vid = 0;
  if (rc == CUDA_SUCCESS && a == NULL && fc_vmm_mapped((uintptr_t)ptr, 1) &&
      fc_vmm_reserved((uintptr_t)ptr, &vstart, &vsize, &vid)) {
    /* A mapped piece of a reserved range: the range, as measured, not the piece. */
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = vid; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)vstart; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = vsize; break;
    default: *(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
    }
    FC_END(CUDA_SUCCESS);
  }
  if (rc == CUDA_SUCCESS && a == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = a->buffer_id; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)a->p; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = a->size; break;
    default: *(unsigned int *)data = a->kind == FC_MEM_DEVICE ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    }
  }
  FC_END(rc);
}

/* Several attributes at once: each as cuPointerGetAttribute answers it; for a pointer
 * the driver does not know (or an attribute not modelled), zeros and CUDA_SUCCESS, as
 * the real driver documents ("will not return an error when the ptr encountered is not
 * a valid CUDA pointer"). */
FC_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                                  void **data, CUdeviceptr ptr)
{
  CUresult rc = CUDA_SUCCESS;
  if (attributes == NULL || data == NULL || numAttributes == 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; rc == CUDA_SUCCESS && i < numAttributes; i++) {
    if (data[i] == NULL) {
      rc = CUDA_ERROR_INVALID_VALUE;
      break;
    }
    size_t width = attributes[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE ? sizeof(unsigned int) : sizeof(uint64_t);
    memset(data[i], 0, width);
    CUresult one = cuPointerGetAttribute(data[i], attributes[i], ptr);   /* its own call bracket */
    if (one == CUDA_ERROR_NOT_INITIALIZED || one == CUDA_ERROR_INVALID_CONTEXT)
      rc = one;
    else if (one != CUDA_SUCCESS)
      memset(data[i], 0, width);
    uintptr_t vstart;
    size_t vsize;
    unsigned long long vid;
    if (one == CUDA_ERROR_INVALID_VALUE && !fc_vmm_mapped((uintptr_t)ptr, 1) &&
        fc_vmm_reserved((uintptr_t)ptr, &vstart, &vsize, &vid)) {
      /* Measured (H200, CUDA 13.0): an address in a reserved range where
       * nothing is mapped has no attribute of its own, yet the plural call
       * answers the range's start and size, buffer id 0. */
      if (attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
        *(CUdeviceptr *)data[i] = (CUdeviceptr)vstart;
      else if (attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
        *(size_t *)data[i] = vsize;
    }
  }
  return rc;
}
