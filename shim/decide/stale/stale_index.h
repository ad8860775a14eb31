/* The stale-pointer check's index by address (and by graph exec): a map from
 * a nonzero 64-bit key to pointers, several values per key allowed, open
 * addressing with linear probing, so that a free or an unmap finds the
 * watched memory at its address in a few probes however many graph execs
 * live. Not thread-safe: its owner (stale_watch.c) holds its own lock. */
#ifndef CAPGUARD_STALE_INDEX_H
#define CAPGUARD_STALE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t key; /* 0: empty */
  void *val;
} cg_index_slot;

typedef struct {
  cg_index_slot *slots;
  size_t cap, n; /* cap a power of two (0 before the first put) */
} cg_index;

/* Adds (key, val); false out of memory (nothing added). */
bool cg_index_put(cg_index *m, uint64_t key, void *val);
/* Removes one (key, val) pair; false when there is none. */
bool cg_index_del(cg_index *m, uint64_t key, const void *val);
/* The values under key: start with *pos = 0; NULL when there are no more. */
void *cg_index_next(const cg_index *m, uint64_t key, size_t *pos);
/* Removes the value cg_index_next(m, key, pos) just returned (pos as it
 * left it), without looking for it again. */
void cg_index_del_found(cg_index *m, uint64_t key, size_t pos);
/* Everything freed; the index empty again. */
void cg_index_clear(cg_index *m);

#endif
