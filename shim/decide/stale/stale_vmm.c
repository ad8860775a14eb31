/* stale_vmm.h. A piece is indexed under each 2 MiB granule it covers (the
 * mapping granularity of every NVIDIA GPU, so usually one); an address is
 * found by its granule in a probe or two. */
#include "stale_vmm.h"

#include <stdlib.h>

#define GRANULE_SHIFT 21

static uint64_t granule_key(uint64_t addr) { return (addr >> GRANULE_SHIFT) + 1; /* 0 is empty */ }

static uint64_t phys_of(cg_vmm *v, uint64_t handle) {
  size_t pos = 0;
  void *had = cg_index_next(&v->handles, handle + 1, &pos);
  if (had)
    return (uint64_t)(uintptr_t)had;
  uint64_t n = ++v->next_phys;
  return cg_index_put(&v->handles, handle + 1, (void *)(uintptr_t)n) ? n : 0;
}

static void unindex(cg_vmm *v, cg_vmm_piece *p, uint64_t upto) {
  for (uint64_t g = p->start >> GRANULE_SHIFT; g < upto; g++)
    (void)cg_index_del(&v->by_granule, g + 1, p);
}

/* A piece's record: a spare one (an allocator's segments map and unmap
 * pieces over and over), else a new one. */
static cg_vmm_piece *new_piece(cg_vmm *v) {
  cg_vmm_piece *p = v->spare;
  if (p) {
    v->spare = (cg_vmm_piece *)(uintptr_t)p->start;
    return p;
  }
  return malloc(sizeof *p);
}

static void spare_piece(cg_vmm *v, cg_vmm_piece *p) {
  p->start = (uint64_t)(uintptr_t)v->spare;
  v->spare = p;
}

bool cg_vmm_map(cg_vmm *v, uint64_t ptr, uint64_t size, uint64_t handle) {
  if (!size || ptr + size < ptr)
    return false;
  cg_vmm_piece *p = new_piece(v);
  uint64_t phys = p ? phys_of(v, handle) : 0;
  if (!phys) {
    if (p)
      spare_piece(v, p);
    return false;
  }
  p->start = ptr;
  p->size = size;
  p->phys = phys;
  uint64_t last = (ptr + size - 1) >> GRANULE_SHIFT;
  for (uint64_t g = ptr >> GRANULE_SHIFT; g <= last; g++)
    if (!cg_index_put(&v->by_granule, g + 1, p)) {
      unindex(v, p, g);
      spare_piece(v, p);
      return false;
    }
  v->pieces++;
  return true;
}

const cg_vmm_piece *cg_vmm_find(const cg_vmm *v, uint64_t addr) {
  size_t pos = 0;
  const cg_vmm_piece *p;
  while ((p = cg_index_next(&v->by_granule, granule_key(addr), &pos)))
    if (addr >= p->start && addr - p->start < p->size)
      return p;
  return NULL;
}

/* The pieces overlapping [lo, hi), each once (at the first granule of the
 * range it covers): by granule, or over the whole index when the range holds
 * more granules than the index has entries. */
void cg_vmm_each_in(const cg_vmm *v, uint64_t lo, uint64_t len, void (*fn)(const cg_vmm_piece *, void *),
                    void *arg) {
  if (!len || !v->pieces)
    return;
  uint64_t hi = lo + len < lo ? UINT64_MAX : lo + len, first = lo >> GRANULE_SHIFT,
           last = (hi - 1) >> GRANULE_SHIFT;
  if (last - first > v->by_granule.cap / 4) { /* a lookup costs about what four slots looked at do */
    for (size_t i = 0; i < v->by_granule.cap; i++) {
      const cg_vmm_piece *p = v->by_granule.slots[i].val;
      if (v->by_granule.slots[i].key && p->start < hi && lo < p->start + p->size &&
          v->by_granule.slots[i].key == granule_key(p->start > lo ? p->start : lo))
        fn(p, arg);
    }
    return;
  }
  for (uint64_t g = first; g <= last; g++) {
    size_t pos = 0;
    const cg_vmm_piece *p;
    while ((p = cg_index_next(&v->by_granule, g + 1, &pos)))
      if (p->start < hi && lo < p->start + p->size && granule_key(p->start > lo ? p->start : lo) == g + 1)
        fn(p, arg);
  }
}

typedef struct {
  cg_vmm_piece *p[64];
  size_t n;
  bool more;
} batch;

static void collect(const cg_vmm_piece *p, void *arg) {
  batch *b = arg;
  if (b->n < 64)
    b->p[b->n++] = (cg_vmm_piece *)p;
  else
    b->more = true;
}

/* Pieces in a range of more than one granule (or not at one's start):
 * collected first (the index changes as pieces go), 64 a round. Apart from
 * the one-granule path, so that the common unmap saves no registers for it. */
static __attribute__((noinline)) void unmap_many(cg_vmm *v, uint64_t ptr, uint64_t size) {
  batch b;
  do {
    b.n = 0;
    b.more = false;
    cg_vmm_each_in(v, ptr, size, collect, &b);
    for (size_t i = 0; i < b.n; i++) {
      unindex(v, b.p[i], ((b.p[i]->start + b.p[i]->size - 1) >> GRANULE_SHIFT) + 1);
      v->pieces--;
      spare_piece(v, b.p[i]);
    }
  } while (b.more);
}

void cg_vmm_unmap(cg_vmm *v, uint64_t ptr, uint64_t size) {
  if (!size || size > ((uint64_t)1 << GRANULE_SHIFT) || (ptr & (((uint64_t)1 << GRANULE_SHIFT) - 1)) != 0) {
    unmap_many(v, ptr, size);
    return;
  }
  /* Within one granule (an allocator's usual unmap: one piece, the whole
   * range): found and gone in a probe or two. Several pieces there take the
   * general path. */
  uint64_t key = granule_key(ptr);
  size_t pos = 0;
  cg_vmm_piece *p;
  while ((p = cg_index_next(&v->by_granule, key, &pos)))
    if (p->start >= ptr && p->start - ptr < size) {
      if (p->start != ptr || p->size != size) {
        unmap_many(v, ptr, size);
        return;
      }
      v->pieces--;
      spare_piece(v, p);
      cg_index_del_found(&v->by_granule, key, pos);
      return;
    }
}

void cg_vmm_release(cg_vmm *v, uint64_t handle) {
  size_t pos = 0;
  void *had = cg_index_next(&v->handles, handle + 1, &pos);
  if (had)
    (void)cg_index_del(&v->handles, handle + 1, had);
}
