#include "seen_set.h"

#include <stdlib.h>

/* uthash's default reaction to a failed malloc is exit(): not in someone
 * else's process. A failed add leaves the identity out, found by a lookup. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

struct cg_seen_entry {
  cg_hash128 key;
  UT_hash_handle hh;
};

bool cg_seen_first(cg_seen_set *s, cg_hash128 key) {
  cg_seen_entry *e = NULL;
  HASH_FIND(hh, s->head, &key, sizeof key, e);
  if (e)
    return false;
  if (HASH_COUNT(s->head) >= CG_SEEN_MAX || !(e = calloc(1, sizeof *e)))
    return true;
  e->key = key;
  HASH_ADD(hh, s->head, key, sizeof e->key, e);
  cg_seen_entry *added = NULL;
  HASH_FIND(hh, s->head, &key, sizeof key, added);
  if (added != e) /* the add ran out of memory */
    free(e);
  return true;
}

void cg_seen_clear(cg_seen_set *s) {
  cg_seen_entry *e, *tmp;
  HASH_ITER(hh, s->head, e, tmp) {
    HASH_DEL(s->head, e);
    free(e);
  }
}
