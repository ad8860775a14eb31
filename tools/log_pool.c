#include "log_pool.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

void *cgl_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fputs("capguard: out of memory reading the log\n", stderr);
    exit(2);
  }
  return q;
}

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

static bool unsafe(unsigned char c) { return c < 0x20 || c == 0x7f; }

const char *cgl_intern(struct cgl_pool *p, const char *s, size_t n) {
  if (!s)
    return NULL;
  char small[256];
  char *clean = n < sizeof small ? small : cgl_xrealloc(NULL, n + 1);
  for (size_t i = 0; i < n; i++)
    clean[i] = unsafe((unsigned char)s[i]) ? '?' : s[i];
  clean[n] = '\0';
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

typedef struct {
  long long key[3]; /* table, a, b */
  size_t value;
  UT_hash_handle hh;
} index_entry;

struct cgl_index {
  index_entry *entries;
};

struct cgl_index *cgl_index_new(void) {
  struct cgl_index *x = cgl_xrealloc(NULL, sizeof *x);
  x->entries = NULL;
  return x;
}

void cgl_index_free(struct cgl_index *x) {
  if (!x)
    return;
  index_entry *e, *t;
  HASH_ITER(hh, x->entries, e, t) {
    HASH_DEL(x->entries, e);
    free(e);
  }
  free(x);
}

long cgl_index_get(struct cgl_index *x, int t, long long a, long long b) {
  long long key[3] = {t, a, b};
  index_entry *e;
  HASH_FIND(hh, x->entries, key, sizeof key, e);
  return e ? (long)e->value : -1;
}

void cgl_index_put(struct cgl_index *x, int t, long long a, long long b, size_t value) {
  long long key[3] = {t, a, b};
  index_entry *e;
  HASH_FIND(hh, x->entries, key, sizeof key, e);
  if (!e) {
    e = cgl_xrealloc(NULL, sizeof *e);
    memset(e, 0, sizeof *e);
    memcpy(e->key, key, sizeof key);
    HASH_ADD(hh, x->entries, key, sizeof e->key, e);
  }
  e->value = value;
}
