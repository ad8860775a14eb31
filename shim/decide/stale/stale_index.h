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
/* A key's first slot to look at. */
static inline size_t cg_index_home(const cg_index *m, uint64_t key) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (m->cap - 1);
}

/* The values under key: start with *pos = 0; NULL when there are no more.
 * Inline: a free's and an unmap's lookups are most of their cost. */
static inline void *cg_index_next(const cg_index *m, uint64_t key, size_t *pos) {
  if (!m->cap || !key)
    return NULL;
  size_t i = (cg_index_home(m, key) + *pos) & (m->cap - 1);
  for (; m->slots[i].key; i = (i + 1) & (m->cap - 1)) {
    ++*pos;
    if (m->slots[i].key == key)
      return m->slots[i].val;
  }
  return NULL;
}
/* Empties slot i, moving the run after it back. */
void cg_index_remove_at(cg_index *m, size_t i);
/* Removes the value cg_index_next(m, key, pos) just returned (pos as it
 * left it), without looking for it again. */
static inline void cg_index_del_found(cg_index *m, uint64_t key, size_t pos) {
  if (m->cap && pos)
    cg_index_remove_at(m, (cg_index_home(m, key) + pos - 1) & (m->cap - 1));
}
/* Everything freed; the index empty again. */
void cg_index_clear(cg_index *m);

#endif
