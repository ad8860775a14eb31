#include "log_pool.h"
#include "capguard/char_class.h"

#include "xalloc.h"

#include "capguard/text_out.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *cgl_xrealloc(void *p, size_t n) { return cg_xrealloc(p, n, "reading the log"); }

/* Interned strings live in blocks of an arena, each after a header of its
 * length and hash, found through an open-addressing table of pointers: about
 * 12 bytes more than the string itself, where a hash table entry of its own
 * allocation cost about 80 (a log of a million processes interns a million
 * image hashes). The reader's lines are at most CGL_LINE_MAX, so a string's
 * length fits the header. */
typedef struct {
  uint32_t len, hash;
} str_head;

typedef struct arena_block {
  struct arena_block *prev;
  size_t used, cap;
  _Alignas(str_head) char data[];
} arena_block;

enum { BLOCK_BYTES = 1 << 20 };

/* An interned list: its strings' pointers after it, in blocks of an arena
 * of their own, found through an open-addressing table of pointers (about
 * 16 bytes more than the pointers, where an allocation with uthash's
 * handle cost about 100: a large log interns a list for most loads). */
typedef struct {
  cgl_strs list;
  uint32_t hash;
  const char *key[]; /* the interned pointers; list.v points here */
} pooled_list;

struct cgl_pool {
  const char **slots; /* interned strings, NULL for an empty slot; cap a power of two */
  size_t cap, n;
  arena_block *block;
  pooled_list **lists; /* NULL for an empty slot; n_lists of cap_lists, a power of two */
  size_t n_lists, cap_lists;
  arena_block *list_block;
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
  for (arena_block *b = p->block, *prev; b; b = prev) {
    prev = b->prev;
    free(b);
  }
  for (arena_block *b = p->list_block, *prev; b; b = prev) {
    prev = b->prev;
    free(b);
  }
  free(p->slots);
  free(p->lists);
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

static uint32_t hash_of(const char *s, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  for (; n >= 8; s += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0x94D049BB133111EBull;
  h ^= h >> 29;
  return (uint32_t)(h ^ (h >> 32));
}

static const str_head *head_of(const char *s) { return (const str_head *)(const void *)(s - sizeof(str_head)); }

/* The slot of s[0..n) (hash h): where it is, or the empty slot it would take. */
static const char **slot_for(const char **slots, size_t cap, const char *s, size_t n, uint32_t h) {
  for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
    const str_head *e = slots[i] ? head_of(slots[i]) : NULL;
    if (!e || (e->hash == h && e->len == n && !memcmp(slots[i], s, n)))
      return &slots[i];
  }
}

/* An arena entry's bytes: its header and string, padded to the header's alignment. */
static size_t entry_bytes(size_t n) {
  return (sizeof(str_head) + n + 1 + sizeof(str_head) - 1) / sizeof(str_head) * sizeof(str_head);
}

/* need bytes at the end of the arena whose newest block is *chain: a block
 * more when the newest lacks them; a long request's block of its own,
 * slipped under the newest, so the newest keeps its room for the short. */
static void *arena_room(arena_block **chain, size_t need) {
  arena_block *b = *chain;
  if (!b || b->cap - b->used < need) {
    size_t cap = need > BLOCK_BYTES / 4 ? need : BLOCK_BYTES - sizeof *b;
    arena_block *nb = cgl_xrealloc(NULL, sizeof *nb + cap);
    nb->used = 0;
    nb->cap = cap;
    if (need > BLOCK_BYTES / 4 && b) {
      nb->prev = b->prev;
      b->prev = nb;
    } else {
      nb->prev = b;
      *chain = nb;
    }
    b = nb;
  }
  void *at = b->data + b->used;
  b->used += need;
  return at;
}

/* s[0..n) copied into the arena, after its header. */
static const char *arena_copy(struct cgl_pool *p, const char *s, size_t n, uint32_t h) {
  str_head *e = arena_room(&p->block, entry_bytes(n));
  e->len = (uint32_t)n;
  e->hash = h;
  char *copy = (char *)(e + 1);
  memcpy(copy, s, n);
  copy[n] = '\0';
  return copy;
}

void cgl_pool_seal(struct cgl_pool *p) {
  free(p->slots);
  p->slots = NULL;
  p->cap = 0;
}

/* The table made again from the arena (every string in it once), after
 * cgl_pool_seal dropped it. */
static void unseal(struct cgl_pool *p) {
  size_t cap = 1024;
  while ((p->n + 1) * 10 > cap * 7)
    cap *= 2;
  p->slots = cgl_xrealloc(NULL, cap * sizeof *p->slots);
  memset(p->slots, 0, cap * sizeof *p->slots);
  p->cap = cap;
  for (const arena_block *b = p->block; b; b = b->prev)
    for (size_t off = 0; off < b->used;) {
      const str_head *e = (const str_head *)(const void *)(b->data + off);
      const char *s = (const char *)(e + 1);
      *slot_for(p->slots, cap, s, e->len, e->hash) = s;
      off += entry_bytes(e->len);
    }
}

static const char *intern(struct cgl_pool *p, const char *s, size_t n, bool printable) {
  if (!s)
    return NULL;
  if (!p->slots && p->n)
    unseal(p);
  if (n >= UINT32_MAX)
    return cgl_xrealloc(NULL, SIZE_MAX); /* past any line the reader keeps: out of memory */
  char small[256];
  char *clean = n < sizeof small ? small : cgl_xrealloc(NULL, n + 1);
  memcpy(clean, s, n);
  clean[n] = '\0';
  if (printable)
    cgl_make_printable(clean, n);
  if ((p->n + 1) * 10 > p->cap * 7) { /* keep the load under 0.7 */
    size_t cap = p->cap ? p->cap * 2 : 1024;
    const char **slots = cgl_xrealloc(NULL, cap * sizeof *slots);
    memset(slots, 0, cap * sizeof *slots);
    for (size_t i = 0; i < p->cap; i++)
      if (p->slots[i])
        *slot_for(slots, cap, p->slots[i], head_of(p->slots[i])->len, head_of(p->slots[i])->hash) = p->slots[i];
    free(p->slots);
    p->slots = slots;
    p->cap = cap;
  }
  uint32_t h = hash_of(clean, n);
  const char **slot = slot_for(p->slots, p->cap, clean, n, h);
  if (!*slot) {
    *slot = arena_copy(p, clean, n, h);
    p->n++;
  }
  if (clean != small)
    free(clean);
  return *slot;
}

const char *cgl_intern(struct cgl_pool *p, const char *s, size_t n) { return intern(p, s, n, true); }

const char *cgl_intern_exact(struct cgl_pool *p, const char *s, size_t n) { return intern(p, s, n, false); }

/* room for a list of n pointers in the lists' arena */
static pooled_list *list_room(struct cgl_pool *p, size_t n) {
  size_t need = sizeof(pooled_list) + n * sizeof(const char *), align = _Alignof(pooled_list);
  return arena_room(&p->list_block, (need + align - 1) / align * align);
}

/* The slot of the list of klen bytes of pointers v (hash h). */
static pooled_list **list_slot(pooled_list **slots, size_t cap, const char *const *v, size_t n, uint32_t h) {
  for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
    const pooled_list *l = slots[i];
    if (!l || (l->hash == h && l->list.n == n && !memcmp(l->key, v, n * sizeof *v)))
      return &slots[i];
  }
}

const cgl_strs *cgl_intern_list(struct cgl_pool *p, const char *const *v, size_t n) {
  if (n == 0)
    return &p->empty;
  /* Interned strings are equal exactly when their pointers are: the key is the pointers. */
  if ((p->n_lists + 1) * 10 > p->cap_lists * 7) { /* keep the load under 0.7 */
    size_t cap = p->cap_lists ? p->cap_lists * 2 : 256;
    pooled_list **slots = cgl_xrealloc(NULL, cap * sizeof *slots);
    memset(slots, 0, cap * sizeof *slots);
    for (size_t i = 0; i < p->cap_lists; i++)
      if (p->lists[i])
        *list_slot(slots, cap, p->lists[i]->key, p->lists[i]->list.n, p->lists[i]->hash) = p->lists[i];
    free(p->lists);
    p->lists = slots;
    p->cap_lists = cap;
  }
  uint32_t h = hash_of((const char *)v, n * sizeof *v);
  pooled_list **slot = list_slot(p->lists, p->cap_lists, v, n, h);
  if (!*slot) {
    pooled_list *l = list_room(p, n);
    memcpy(l->key, v, n * sizeof *v);
    l->list.v = l->key;
    l->list.n = n;
    l->hash = h;
    *slot = l;
    p->n_lists++;
  }
  return &(*slot)->list;
}

/* The indices: an open-addressing table (linear probing) per table number,
 * whose slots hold only the value plus one (0: empty), 4 bytes: the key of
 * a value is its item's own (key_of), so a log of a million processes and
 * captures costs 16 MB here, not the 100 MB that slots holding their keys
 * took. */
enum { TABLES = 4 };

struct cgl_index {
  struct {
    uint32_t *slots;
    size_t cap, n; /* cap: a power of two */
  } t[TABLES];
};

struct cgl_index *cgl_index_new(void) {
  struct cgl_index *x = cgl_xrealloc(NULL, sizeof *x);
  memset(x, 0, sizeof *x);
  return x;
}

void cgl_index_clear(struct cgl_index *x) {
  for (int t = 0; t < TABLES; t++)
    free(x->t[t].slots);
  memset(x, 0, sizeof *x);
}

void cgl_index_free(struct cgl_index *x) {
  if (!x)
    return;
  for (int t = 0; t < TABLES; t++)
    free(x->t[t].slots);
  free(x);
}

static size_t slot_of(long long a, long long b, size_t cap) {
  uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ ((uint64_t)b + 0x632BE59BD9B4E019ull);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return (size_t)h & (cap - 1);
}

/* The slot of key (a, b) in table t: where its value is, or the empty slot it would take. */
static uint32_t *probe(uint32_t *slots, size_t cap, int t, long long a, long long b, cgl_index_key key_of,
                       const void *ctx) {
  for (size_t i = slot_of(a, b, cap);; i = (i + 1) & (cap - 1)) {
    if (!slots[i])
      return &slots[i];
    long long ka, kb;
    key_of(ctx, t, slots[i] - 1, &ka, &kb);
    if (ka == a && kb == b)
      return &slots[i];
  }
}

long cgl_index_get(struct cgl_index *x, int t, long long a, long long b, cgl_index_key key_of, const void *ctx) {
  if (!x->t[t].cap)
    return -1;
  uint32_t *e = probe(x->t[t].slots, x->t[t].cap, t, a, b, key_of, ctx);
  return *e ? (long)(*e - 1) : -1;
}

void cgl_index_put(struct cgl_index *x, int t, long long a, long long b, size_t value, cgl_index_key key_of,
                   const void *ctx) {
  if (value >= UINT32_MAX - 1)
    cgl_xrealloc(NULL, SIZE_MAX); /* 4G items: far past memory, said as out of memory */
  size_t cap = x->t[t].cap;
  if ((x->t[t].n + 1) * 10 > cap * 7) { /* keep the load under 0.7 */
    size_t bigger = cap ? cap * 2 : 1024;
    uint32_t *slots = cgl_xrealloc(NULL, bigger * sizeof *slots);
    memset(slots, 0, bigger * sizeof *slots);
    for (size_t i = 0; i < cap; i++)
      if (x->t[t].slots[i]) {
        long long ka, kb;
        key_of(ctx, t, x->t[t].slots[i] - 1, &ka, &kb);
        *probe(slots, bigger, t, ka, kb, key_of, ctx) = x->t[t].slots[i];
      }
    free(x->t[t].slots);
    x->t[t].slots = slots;
    x->t[t].cap = cap = bigger;
  }
  uint32_t *e = probe(x->t[t].slots, cap, t, a, b, key_of, ctx);
  x->t[t].n += !*e;
  *e = (uint32_t)value + 1;
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
