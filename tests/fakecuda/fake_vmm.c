/* fakecuda: the virtual memory API (cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemUnmap, cuMemRelease, cuMemAddressFree, cuMemSetAccess,
 * cuMemGetAllocationGranularity), as PyTorch's expandable segments use it: one large
 * range reserved, pieces of it mapped to physical allocations and unmapped again.
 * Measured (docs/driver-semantics.md, expandable segments on an H200, CUDA 13.0):
 * cuPointerGetAttribute's RANGE_START_ADDR / RANGE_SIZE of an address in a mapped piece
 * name the whole reserved range, not the piece; an unmapped address in the range has no
 * attribute of its own, yet cuPointerGetAttributes answers the range's start and size
 * there, buffer id 0 (fake_memory.c). Not measured, modelled as documented: sizes and
 * addresses are multiples of the granularity (2 MiB here); a physical allocation lives
 * until it is released and unmapped everywhere; the BUFFER_ID of a mapped address is the
 * range's (assumed: nothing was measured). Physical handles are never handed out twice,
 * so a second allocation mapped at the same address is always another handle. */
#include "fake_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FC_VMM_GRANULE ((size_t)2 << 20)
#define FC_VMM_MAX 1024 /* reservations, physical allocations and mappings: each a small table */

struct reservation { uintptr_t va; size_t size; void *backing; unsigned long long buffer_id; };
struct physical { CUmemGenericAllocationHandle h; size_t size; int released; int maps; };
struct mapping { uintptr_t va; size_t size; CUmemGenericAllocationHandle h; };

static struct reservation resv[FC_VMM_MAX];
static struct physical phys[FC_VMM_MAX];
static struct mapping maps[FC_VMM_MAX];
static CUmemGenericAllocationHandle last_handle = 0x1000;
static unsigned long long vmm_buffer_ids = 1ull << 40; /* apart from fake_memory.c's */

static int aligned(uintptr_t v) { return v % FC_VMM_GRANULE == 0; }

static struct reservation *reservation_of(uintptr_t p, size_t n)
{
  for (int i = 0; i < FC_VMM_MAX; i++)
    if (resv[i].size && p >= resv[i].va && n <= resv[i].size && p - resv[i].va <= resv[i].size - n)
      return &resv[i];
  return NULL;
}

static struct physical *physical_of(CUmemGenericAllocationHandle h)
{
  for (int i = 0; i < FC_VMM_MAX; i++)
    if (phys[i].size && phys[i].h == h)
      return &phys[i];
  return NULL;
}

static void physical_maybe_free(struct physical *p)
{
  if (p->released && p->maps == 0)
    memset(p, 0, sizeof(*p));
}

/* The mapping holding address p, or NULL. */
static struct mapping *mapping_at(uintptr_t p)
{
  for (int i = 0; i < FC_VMM_MAX; i++)
    if (maps[i].size && p >= maps[i].va && p - maps[i].va < maps[i].size)
      return &maps[i];
  return NULL;
}

int fc_vmm_reserved(uintptr_t p, uintptr_t *start, size_t *size, unsigned long long *buffer_id)
{
  struct reservation *r = reservation_of(p, 1);
  if (r == NULL)
    return 0;
  *start = r->va;
  *size = r->size;
  *buffer_id = r->buffer_id;
  return 1;
}

int fc_vmm_mapped(uintptr_t p, size_t n)
{
  for (size_t done = 0; done < n;) {
    struct mapping *m = mapping_at(p + done);
    if (m == NULL)
      return 0;
    done = m->va + m->size - p;
  }
  return 1;
}

FC_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                         CUmemAllocationGranularity_flags option)
{
  FC_BEGIN;
  (void)option;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && (granularity == NULL || prop == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *granularity = FC_VMM_GRANULE;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                               unsigned long long flags)
{
  FC_BEGIN;
  (void)alignment; (void)addr; (void)flags;   /* a hint: the fake places the range itself */
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && (ptr == NULL || size == 0 || !aligned(size)))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct reservation *r = NULL;
  for (int i = 0; rc == CUDA_SUCCESS && r == NULL && i < FC_VMM_MAX; i++)
    if (resv[i].size == 0)
      r = &resv[i];
  if (rc == CUDA_SUCCESS && r == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  /* Backed by host memory (never touched unless copied into), aligned to the granule. */
  void *b = rc == CUDA_SUCCESS ? mmap(NULL, size + FC_VMM_GRANULE, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                               : MAP_FAILED;
  if (rc == CUDA_SUCCESS && b == MAP_FAILED)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    r->backing = b;
    r->va = ((uintptr_t)b + FC_VMM_GRANULE - 1) / FC_VMM_GRANULE * FC_VMM_GRANULE;
    r->size = size;
    r->buffer_id = ++vmm_buffer_ids;
    *ptr = (CUdeviceptr)r->va;
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct reservation *r = rc == CUDA_SUCCESS ? reservation_of((uintptr_t)ptr, 1) : NULL;
  if (rc == CUDA_SUCCESS && (r == NULL || r->va != (uintptr_t)ptr || r->size != size))
    rc = CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; rc == CUDA_SUCCESS && i < FC_VMM_MAX; i++)
    if (maps[i].size && maps[i].va >= r->va && maps[i].va - r->va < r->size)
      rc = CUDA_ERROR_INVALID_VALUE;   /* still mapped in it */
  if (rc == CUDA_SUCCESS) {
    munmap(r->backing, r->size + FC_VMM_GRANULE);
    memset(r, 0, sizeof(*r));
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                       const CUmemAllocationProp *prop, unsigned long long flags)
{
  FC_BEGIN;
  (void)flags;
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS && (handle == NULL || prop == NULL || size == 0 || !aligned(size)))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct physical *p = NULL;
  for (int i = 0; rc == CUDA_SUCCESS && p == NULL && i < FC_VMM_MAX; i++)
    if (phys[i].size == 0)
      p = &phys[i];
  if (rc == CUDA_SUCCESS && p == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    p->h = ++last_handle;
    p->size = size;
    *handle = p->h;
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct physical *p = rc == CUDA_SUCCESS ? physical_of(handle) : NULL;
  if (rc == CUDA_SUCCESS && (p == NULL || p->released))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    p->released = 1;   /* its memory stays while a mapping holds it */
    physical_maybe_free(p);
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                    unsigned long long flags)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct physical *p = rc == CUDA_SUCCESS ? physical_of(handle) : NULL;
  if (rc == CUDA_SUCCESS && (p == NULL || p->released || flags != 0 || size == 0 || !aligned(ptr) ||
                             !aligned(size) || !aligned(offset) || offset > p->size || size > p->size - offset ||
                             reservation_of((uintptr_t)ptr, size) == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; rc == CUDA_SUCCESS && k < size; k += FC_VMM_GRANULE)
    if (mapping_at((uintptr_t)ptr + k) != NULL)
      rc = CUDA_ERROR_INVALID_VALUE;   /* already mapped */
  struct mapping *m = NULL;
  for (int i = 0; rc == CUDA_SUCCESS && m == NULL && i < FC_VMM_MAX; i++)
    if (maps[i].size == 0)
      m = &maps[i];
  if (rc == CUDA_SUCCESS && m == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    m->va = (uintptr_t)ptr;
    m->size = size;
    m->h = handle;
    p->maps++;
  }
  FC_END(rc);
}

/* The range must cover whole mappings (one or several), as the driver documents. */
FC_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  uintptr_t lo = (uintptr_t)ptr, hi = lo + size;
  if (rc == CUDA_SUCCESS && (size == 0 || !aligned(lo) || !aligned(size) || !fc_vmm_mapped(lo, size)))
    rc = CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; rc == CUDA_SUCCESS && i < FC_VMM_MAX; i++)
    if (maps[i].size && maps[i].va < hi && lo < maps[i].va + maps[i].size &&
        (maps[i].va < lo || maps[i].va + maps[i].size > hi))
      rc = CUDA_ERROR_INVALID_VALUE;   /* would split a mapping */
  for (int i = 0; rc == CUDA_SUCCESS && i < FC_VMM_MAX; i++) {
    if (maps[i].size == 0 || maps[i].va < lo || maps[i].va >= hi)
      continue;
    struct physical *p = physical_of(maps[i].h);
    madvise((void *)maps[i].va, maps[i].size, MADV_DONTNEED);   /* what was there is gone (reads 0) */
    memset(&maps[i], 0, sizeof(maps[i]));
    if (p != NULL) {
      p->maps--;
      physical_maybe_free(p);
    }
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && (desc == NULL || count == 0 || !fc_vmm_mapped((uintptr_t)ptr, size)))
    rc = CUDA_ERROR_INVALID_VALUE;
  FC_END(rc);
}
