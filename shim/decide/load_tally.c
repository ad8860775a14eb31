#include "load_tally.h"

#include <pthread.h>
#include <string.h>

/* A fixed table, so counting never allocates inside the host and never grows
 * without bound: a start-up loads hundreds of distinct images during
 * capture, not thousands. Past that, counts are unknown and a record says one
 * load (what a version-1 file says). Linear probing on the hash's low bits. */
#define TALLY_SLOTS 4096

typedef struct {
  cg_hash128 hash;
  uint64_t size; /* 0: free slot (no image is empty) */
  uint32_t count[2];
} tally_slot;

static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static tally_slot slots[TALLY_SLOTS];

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

uint32_t cg_tally_add(cg_hash128 hash, uint64_t size, bool library) {
  if (!size)
    return 0;
  pthread_mutex_lock(&tally_lock);
  tally_slot *s = find(hash, size, true);
  uint32_t n = s && s->count[library] < UINT32_MAX ? ++s->count[library] : 0;
  pthread_mutex_unlock(&tally_lock);
  return n;
}

uint32_t cg_tally_get(cg_hash128 hash, uint64_t size, bool library) {
  if (!size)
    return 0;
  pthread_mutex_lock(&tally_lock);
  tally_slot *s = find(hash, size, false);
  uint32_t n = s ? s->count[library] : 0;
  pthread_mutex_unlock(&tally_lock);
  return n;
}

void cg_tally_reset(void) {
  pthread_mutex_init(&tally_lock, NULL);
  memset(slots, 0, sizeof slots);
}
