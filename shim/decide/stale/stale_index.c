/* stale_index.h. Linear probing kept under half full; a removal shifts the
 * run after it back (no tombstones), so that probes stay short however many
 * execs come and go. */
#include "stale_index.h"

#include <stdlib.h>

static bool grow(cg_index *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  cg_index_slot *s = calloc(cap, sizeof *s);
  if (!s)
    return false;
  cg_index old = *m;
  m->slots = s;
  m->cap = cap;
  m->n = 0;
  for (size_t i = 0; i < old.cap; i++)
    if (old.slots[i].key)
      (void)cg_index_put(m, old.slots[i].key, old.slots[i].val); /* room enough: cannot fail */
  free(old.slots);
  return true;
}

bool cg_index_put(cg_index *m, uint64_t key, void *val) {
  if (!key || ((m->n + 1) * 2 > m->cap && !grow(m)))
    return false;
  size_t i = cg_index_home(m, key);
  while (m->slots[i].key)
    i = (i + 1) & (m->cap - 1);
  m->slots[i].key = key;
  m->slots[i].val = val;
  m->n++;
  return true;
}

/* Backward shift from the emptied slot i: each later entry of the run moves
 * into the hole unless its home lies cyclically in (hole, entry]. */
void cg_index_remove_at(cg_index *m, size_t i) {
  size_t mask = m->cap - 1, hole = i;
  for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
    size_t h = cg_index_home(m, m->slots[j].key);
    bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays)
      continue;
    m->slots[hole] = m->slots[j];
    hole = j;
  }
  m->slots[hole].key = 0;
  m->slots[hole].val = NULL;
  m->n--;
}

bool cg_index_del(cg_index *m, uint64_t key, const void *val) {
  if (!m->cap || !key)
    return false;
  size_t mask = m->cap - 1, i = cg_index_home(m, key);
  for (; m->slots[i].key; i = (i + 1) & mask)
    if (m->slots[i].key == key && m->slots[i].val == val) {
      cg_index_remove_at(m, i);
      return true;
    }
  return false;
}

void cg_index_clear(cg_index *m) {
  free(m->slots);
  m->slots = NULL;
  m->cap = m->n = 0;
}
