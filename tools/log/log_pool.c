#include "log_pool.h"
#include "capguard/char_class.h"

#include "xalloc.h"

#include "capguard/text_out.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

void *cgl_xrealloc(void *p, size_t n) { return cg_xrealloc(p, n, "reading the log"); }

typedef struct {
  UT_hash_handle hh;
  size_t len;
  char s[]; /* NUL-terminated */
} pooled_str;

typedef struct {
  UT_hash_handle hh;
  cgl_strs list;
  const char *key[]; /* the interned pointers; list.v points here */
} pooled_list;

struct cgl_pool {
  pooled_str *strs;
  pooled_list *lists;
  cgl_strs empty;
};

struct cgl_pool *cgl_pool_new(void) {
  struct cgl_pool *p = cgl_xrealloc(NULL, sizeof *p);
  memset(p, 0, sizeof *p);
  return p;
}

void cgl_pool_free(struct cgl_pool *p) {
  if (!p)
    return;
  pooled_str *s, *ts;
  HASH_ITER(hh, p->strs, s, ts) {
    HASH_DEL(p->strs, s);
    free(s);
  }
  pooled_list *l, *tl;
  HASH_ITER(hh, p->lists, l, tl) {
    HASH_DEL(p->lists, l);
    free(l);
  }
  free(p);
}

static bool unsafe(unsigned char c) { return cg_is_control(c); }


void cgl_make_printable(char *s, size_t n) {
  unsigned char *p = (unsigned char *)s, *end = p + n;
  while (p < end) {
    size_t k = unsafe(*p) ? 0 : cg_utf8_len(p, (size_t)(end - p));
    if (k == 0) {
      *p++ = '?';
      continue;
    }
    p += k;
  }
}

static const char *intern(struct cgl_pool *p, const char *s, size_t n, bool printable) {
  if (!s)
    return NULL;
  char small[256];
  char *clean = n < sizeof small ? small : cgl_xrealloc(NULL, n + 1);
  memcpy(clean, s, n);
  clean[n] = '\0';
  if (printable)
    cgl_make_printable(clean, n);
  pooled_str *found;
  HASH_FIND(hh, p->strs, clean, n, found);
  if (!found) {
    found = cgl_xrealloc(NULL, sizeof *found + n + 1);
    memset(&found->hh, 0, sizeof found->hh);
    found->len = n;
    memcpy(found->s, clean, n + 1);
    HASH_ADD_KEYPTR(hh, p->strs, found->s, n, found);
  }
  if (clean != small)
    free(clean);
  return found->s;
}

const char *cgl_intern(struct cgl_pool *p, const char *s, size_t n) { return intern(p, s, n, true); }

const char *cgl_intern_exact(struct cgl_pool *p, const char *s, size_t n) { return intern(p, s, n, false); }

const cgl_strs *cgl_intern_list(struct cgl_pool *p, const char *const *v, size_t n) {
  if (n == 0)
    return &p->empty;
  /* Interned strings are equal exactly when their pointers are: the key is the pointers. */
  size_t klen = n * sizeof *v;
  pooled_list *found;
  HASH_FIND(hh, p->lists, v, klen, found);
  if (!found) {
    found = cgl_xrealloc(NULL, sizeof *found + klen);
    memset(&found->hh, 0, sizeof found->hh);
    memcpy(found->key, v, klen);
    found->list.v = found->key;
    found->list.n = n;
    HASH_ADD_KEYPTR(hh, p->lists, found->key, klen, found);
  }
  return &found->list;
}

/* The indices: one open-addressing table (linear probing) of (table, a, b)
 * -> value. Entries are 24 bytes in one array (the table, plus one, in the
 * top two bits of the value; 0 an empty slot): a log of a million captures
 * costs tens of MB here, not one allocation per capture. */
typedef struct {
  long long a, b;
  uint64_t tv;
} index_entry;
#define TV_SHIFT 62

struct cgl_index {
  index_entry *slots;
  size_t cap, n; /* cap: a power of two */
};

struct cgl_index *cgl_index_new(void) {
  struct cgl_index *x = cgl_xrealloc(NULL, sizeof *x);
  memset(x, 0, sizeof *x);
  return x;
}

void cgl_index_free(struct cgl_index *x) {
  if (!x)
    return;
  free(x->slots);
  free(x);
}

static size_t slot_of(uint64_t t, long long a, long long b, size_t cap) {
  uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ ((uint64_t)b + 0x632BE59BD9B4E019ull + t);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return (size_t)h & (cap - 1);
}

/* t is the table plus one, as the slot holds it */
static index_entry *probe(struct cgl_index *x, uint64_t t, long long a, long long b) {
  for (size_t i = slot_of(t, a, b, x->cap);; i = (i + 1) & (x->cap - 1)) {
    index_entry *e = &x->slots[i];
    if (!e->tv || (e->tv >> TV_SHIFT == t && e->a == a && e->b == b))
      return e;
  }
}

long cgl_index_get(struct cgl_index *x, int t, long long a, long long b) {
  if (!x->cap)
    return -1;
  index_entry *e = probe(x, (uint64_t)t + 1, a, b);
  return e->tv ? (long)(e->tv & ((1ull << TV_SHIFT) - 1)) : -1;
}

void cgl_index_put(struct cgl_index *x, int t, long long a, long long b, size_t value) {
  if ((x->n + 1) * 10 > x->cap * 7) { /* keep the load under 0.7 */
    struct cgl_index bigger = {NULL, x->cap ? x->cap * 2 : 1024, 0};
    bigger.slots = cgl_xrealloc(NULL, bigger.cap * sizeof *bigger.slots);
    memset(bigger.slots, 0, bigger.cap * sizeof *bigger.slots);
    for (size_t i = 0; i < x->cap; i++)
      if (x->slots[i].tv) {
        *probe(&bigger, x->slots[i].tv >> TV_SHIFT, x->slots[i].a, x->slots[i].b) = x->slots[i];
        bigger.n++;
      }
    free(x->slots);
    *x = bigger;
  }
  uint64_t tt = (uint64_t)t + 1;
  index_entry *e = probe(x, tt, a, b);
  if (!e->tv) {
    e->a = a;
    e->b = b;
    x->n++;
  }
  /* values are indices into arrays in memory: far below 2^62 */
  e->tv = tt << TV_SHIFT | ((uint64_t)value & ((1ull << TV_SHIFT) - 1));
}

json_t *cgl_json_text(const char *s) {
  json_t *j = json_string(s ? s : "");
  if (j || !s)
    return j;
  char *copy = strdup(s);
  if (!copy)
    return NULL;
  cgl_make_printable(copy, strlen(copy));
  j = json_string(copy);
  free(copy);
  return j;
}
