#include "load_tally.h"
#include "locks.h"

#include <pthread.h>
#include <string.h>

/* Fixed tables, so counting never allocates inside the host and never grows
 * without bound: a start-up loads hundreds of distinct images during
 * capture, not thousands. Past TALLY_SLOTS images, counts are unknown and a
 * record says one load (what a version-1 file says). Past TRACKED_HANDLES
 * copies alive at once, an unload is not seen and the count stays high:
 * never lower than what was alive, so the next run is never short. */
#define TALLY_SLOTS 4096
#define TRACKED_HANDLES 4096

typedef struct {
  cg_hash128 hash;
  uint64_t size; /* 0: free slot (no image is empty) */
  uint32_t alive[2], peak[2];
} tally_slot;

typedef struct {
  void *handle;
  void *ctx; /* the context it was loaded on: a module dies with it */
  uint32_t slot;
  bool library;
} tracked;

static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static tally_slot slots[TALLY_SLOTS];
static tracked handles[TRACKED_HANDLES]; /* unordered, n_handles used */
static uint32_t n_handles;
static uint32_t any_tracked; /* n_handles, read without the lock on the unload path */

static tally_slot *find(cg_hash128 h, uint64_t size, bool insert) {
  for (size_t i = 0, at = h.lo % TALLY_SLOTS; i < TALLY_SLOTS; i++, at = (at + 1) % TALLY_SLOTS) {
    tally_slot *s = &slots[at];
    if (s->size == size && s->hash.hi == h.hi && s->hash.lo == h.lo)
      return s;
    if (s->size == 0) {
      if (!insert)
        return NULL;
      s->hash = h;
      s->size = size;
      return s;
    }
  }
  return NULL;
}

cg_hash128 cg_tally_key(cg_hash128 image, const cg_load_opts *opts) {
  uint64_t o = cg_load_opts_hash(opts);
  return (cg_hash128){image.hi ^ o, image.lo ^ (o * 0x9e3779b97f4a7c15ull)};
}

uint32_t cg_tally_add(cg_hash128 hash, uint64_t size, bool library) {
  if (!size)
    return 0;
  cg_lock(&tally_lock);
  tally_slot *s = find(hash, size, true);
  uint32_t n = 0;
  if (s && s->alive[library] < UINT32_MAX) {
    if (++s->alive[library] > s->peak[library])
      s->peak[library] = s->alive[library];
    n = s->peak[library];
  }
  cg_unlock(&tally_lock);
  return n;
}

void cg_tally_handle(void *handle, cg_hash128 hash, uint64_t size, bool library, void *ctx) {
  if (!handle || !size)
    return;
  cg_lock(&tally_lock);
  tally_slot *s = find(hash, size, false);
  if (s && n_handles < TRACKED_HANDLES) {
    handles[n_handles++] = (tracked){handle, ctx, (uint32_t)(s - slots), library};
    __atomic_store_n(&any_tracked, n_handles, __ATOMIC_RELAXED);
  }
  cg_unlock(&tally_lock);
}

void cg_tally_not_loaded(cg_hash128 hash, uint64_t size, bool library) {
  if (!size)
    return;
  cg_lock(&tally_lock);
  tally_slot *s = find(hash, size, false);
  if (s && s->alive[library])
    s->alive[library]--;
  cg_unlock(&tally_lock);
}

void cg_tally_unloaded(void *handle) {
  if (!__atomic_load_n(&any_tracked, __ATOMIC_RELAXED))
    return;
  cg_lock(&tally_lock);
  for (uint32_t i = 0; i < n_handles; i++) {
    if (handles[i].handle != handle)
      continue;
    tally_slot *s = &slots[handles[i].slot];
    if (s->alive[handles[i].library])
      s->alive[handles[i].library]--;
    handles[i] = handles[--n_handles];
    __atomic_store_n(&any_tracked, n_handles, __ATOMIC_RELAXED);
    break;
  }
  cg_unlock(&tally_lock);
}

void cg_tally_context_gone(void *ctx) {
  if (!__atomic_load_n(&any_tracked, __ATOMIC_RELAXED))
    return;
  cg_lock(&tally_lock);
  for (uint32_t i = 0; i < n_handles;) {
    if (handles[i].ctx != ctx || handles[i].library) { /* a library outlives its context */
      i++;
      continue;
    }
    tally_slot *s = &slots[handles[i].slot];
    if (s->alive[0])
      s->alive[0]--;
    handles[i] = handles[--n_handles];
  }
  __atomic_store_n(&any_tracked, n_handles, __ATOMIC_RELAXED);
  cg_unlock(&tally_lock);
}

uint32_t cg_tally_get(cg_hash128 hash, uint64_t size, bool library) {
  if (!size)
    return 0;
  cg_lock(&tally_lock);
  tally_slot *s = find(hash, size, false);
  uint32_t n = s ? s->peak[library] : 0;
  cg_unlock(&tally_lock);
  return n;
}

void cg_tally_reset(void) {
  pthread_mutex_init(&tally_lock, NULL);
  memset(slots, 0, sizeof slots);
  n_handles = 0;
  any_tracked = 0;
}
