/* Capture-state model: open captures keyed by stream, the events recorded into
 * them, and the documented prohibition rule (a thread in a given
 * capture-interaction mode against an open capture; the shim keeps each
 * thread's mode itself, model/live_captures.c).
 * No locking here (the caller serialises); no driver calls. Runs inside the
 * shim, so every allocation failure degrades to "not recorded", never a crash. */
#include "capguard/capture_model.h"

#include <stdlib.h>
#include <string.h>

/* uthash's default reaction to a failed malloc is exit(): in someone else's
 * process that is unacceptable. With non-fatal OOM a failed add leaves the
 * element out of the table, which cg_model_event_recorded detects with a
 * lookup. Only the events are hashed: the open captures are few. */
#define HASH_NONFATAL_OOM 1
/* Every key here is one 64-bit handle: a multiply and a shift spread it
 * (uthash's default, Jenkins' hash over bytes, costs hundreds of
 * instructions a lookup). */
#include <stdint.h>
static inline unsigned handle_hash(const void *key, size_t len) {
  uint64_t k = 0;
  memcpy(&k, key, len < sizeof k ? len : sizeof k);
  k *= 0x9e3779b97f4a7c15ull;
  return (unsigned)(k >> 32) ^ (unsigned)k;
}
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = handle_hash((keyptr), (size_t)(keylen)))
#include <uthash.h>

/* Bounds on what a misbehaving process can make us allocate: captures whose
 * end we never see, or events recorded into captures and never recorded
 * again, would otherwise grow the tables forever. Real programs stay far
 * below both. */
#define CG_MODEL_MAX_OPEN 4096
#define CG_MODEL_MAX_EVENTS 65536

/* An open capture, on its shard's list. A shard holds the open captures of
 * its streams, none or one in a real program (a stream captures one
 * sequence at a time, and the shards spread the streams): a list walked
 * from the oldest is shorter than a hash table's lookup, and a begin and an
 * end only link and unlink, where uthash made and freed a table and its
 * buckets each time the shard emptied (a 512-byte clear at every begin).
 * At the bound of CG_MODEL_MAX_OPEN, a shard's list is about 128 long. */
typedef struct open_entry {
  cg_capture cap;
  struct open_entry *next, *prev;
} open_entry;

/* An event last recorded into a capture: which one (stream and id, so that
 * a later capture on the same stream is not mistaken for it). */
typedef struct {
  uint64_t event;
  uint64_t stream, capture_id;
  UT_hash_handle hh; /* key: event */
} event_entry;

/* The open captures of the streams of one shard, oldest first, each shard
 * on cache lines of its own: threads capturing on streams of different
 * shards at once write nothing in common but the model's two counters. A
 * spare entry is kept, so that a begin and an end allocate nothing; taken
 * and put back under the shard's lock (capture_model.h). */
typedef struct {
  open_entry *open, *last; /* oldest first: ids grow along the list */
  open_entry *spare;
  uint64_t begun;
} __attribute__((aligned(64))) model_shard;

struct cg_model {
  model_shard shard[CG_MODEL_SHARDS];
  /* Written atomically by begins and ends under their shard's lock alone. */
  struct {
    uint64_t next_id, open;
  } __attribute__((aligned(64))) counts;
  event_entry *events; /* events last recorded into a capture; every shard's lock */
};

static model_shard *shard_of(cg_model *m, uint64_t stream) { return &m->shard[cg_model_shard(stream)]; }

cg_model *cg_model_new(void) {
  cg_model *m = aligned_alloc(64, sizeof *m); /* the shards' own lines: calloc aligns to 16 */
  if (!m) return NULL;
  memset(m, 0, sizeof *m);
  m->counts.next_id = 1;
  return m;
}

void cg_model_free(cg_model *m) {
  if (!m) return;
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++) {
    model_shard *sh = &m->shard[i];
    for (open_entry *o = sh->open, *next; o; o = next) {
      next = o->next;
      free(o);
    }
    free(sh->spare);
  }
  event_entry *e, *etmp;
  HASH_ITER(hh, m->events, e, etmp) {
    HASH_DEL(m->events, e);
    free(e);
  }
  free(m);
}

static open_entry *find_in(const model_shard *sh, uint64_t stream) {
  open_entry *o = sh->open;
  while (o && o->cap.stream != stream)
    o = o->next;
  return o;
}

static open_entry *find_open(const cg_model *m, uint64_t stream) {
  return find_in(&m->shard[cg_model_shard(stream)], stream);
}

cg_capture *cg_model_begin(cg_model *m, uint64_t stream, uint64_t context, cg_capture_mode mode,
                           uint64_t tid, bool into_graph, uint64_t now_ns, void *user) {
  if (!m) return NULL;
  model_shard *sh = shard_of(m, stream);
  if (find_in(sh, stream)) return NULL;
  /* Begins on other shards may pass it at once: a bound, not an exact count. */
  if (__atomic_load_n(&m->counts.open, __ATOMIC_RELAXED) >= CG_MODEL_MAX_OPEN) return NULL;
  open_entry *o = sh->spare;
  if (o)
    sh->spare = NULL;
  else if (!(o = malloc(sizeof *o)))
    return NULL;
  o->cap = (cg_capture){.stream = stream, .context = context, .tid = tid, .mode = mode,
                        .status = CG_CAPTURE_ACTIVE, .into_graph = into_graph, .begin_ns = now_ns, .user = user};
  o->next = NULL;
  o->prev = sh->last;
  if (sh->last)
    sh->last->next = o;
  else
    sh->open = o;
  sh->last = o;
  /* Taken after the add, under the shard's lock: within a shard ids grow in
   * the list's order, which the oldest-first walk relies on. */
  o->cap.id = __atomic_fetch_add(&m->counts.next_id, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&m->counts.open, 1, __ATOMIC_RELAXED);
  sh->begun++;
  return &o->cap;
}

int cg_model_end(cg_model *m, uint64_t stream, bool driver_ok, uint64_t now_ns, cg_capture *out) {
  if (!m) return -1;
  model_shard *sh = shard_of(m, stream);
  open_entry *o = find_in(sh, stream);
  if (!o) return -1;
  if (o->prev)
    o->prev->next = o->next;
  else
    sh->open = o->next;
  if (o->next)
    o->next->prev = o->prev;
  else
    sh->last = o->prev;
  __atomic_sub_fetch(&m->counts.open, 1, __ATOMIC_RELAXED);
  o->cap.status = driver_ok ? CG_CAPTURE_ENDED : CG_CAPTURE_FAILED;
  o->cap.end_ns = now_ns;
  if (out) *out = o->cap;
  if (sh->spare)
    free(o);
  else
    sh->spare = o;
  return 0;
}

cg_capture *cg_model_find(cg_model *m, uint64_t stream) {
  open_entry *o = m ? find_open(m, stream) : NULL;
  return o ? &o->cap : NULL;
}

size_t cg_model_open_count(const cg_model *m) { return m ? (size_t)__atomic_load_n(&m->counts.open, __ATOMIC_RELAXED) : 0; }

uint64_t cg_model_begun_total(const cg_model *m) {
  uint64_t n = 0;
  for (unsigned i = 0; m && i < CG_MODEL_SHARDS; i++)
    n += m->shard[i].begun;
  return n;
}

/* Every open capture, oldest first: the shards' lists merged by id (each
 * list is in id order). */
typedef struct {
  open_entry *at[CG_MODEL_SHARDS];
} oldest_walk;

static void walk_start(cg_model *m, oldest_walk *w) {
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++)
    w->at[i] = m->shard[i].open;
}

static open_entry *walk_next(oldest_walk *w) {
  unsigned best = CG_MODEL_SHARDS;
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++)
    if (w->at[i] && (best == CG_MODEL_SHARDS || w->at[i]->cap.id < w->at[best]->cap.id))
      best = i;
  if (best == CG_MODEL_SHARDS) return NULL;
  open_entry *o = w->at[best];
  w->at[best] = o->next;
  return o;
}

bool cg_capture_prohibits(const cg_capture *c, uint64_t tid, cg_capture_mode thread_mode) {
  if (!c) return false;
  if (c->status != CG_CAPTURE_ACTIVE && c->status != CG_CAPTURE_INVALIDATED) return false;
  bool own = c->tid == tid;
  switch (thread_mode) {
  case CG_MODE_GLOBAL:
    return own ? c->mode != CG_MODE_RELAXED : c->mode == CG_MODE_GLOBAL;
  case CG_MODE_THREAD_LOCAL:
    return own && c->mode != CG_MODE_RELAXED;
  case CG_MODE_RELAXED:
  default:
    return false;
  }
}

size_t cg_model_prohibitors(cg_model *m, uint64_t tid, cg_capture_mode thread_mode,
                            cg_capture **out, size_t cap) {
  if (!m) return 0;
  size_t n = 0;
  oldest_walk w;
  walk_start(m, &w);
  for (open_entry *o; (o = walk_next(&w));) {
    if (!cg_capture_prohibits(&o->cap, tid, thread_mode)) continue;
    if (out && n < cap) out[n] = &o->cap;
    n++;
  }
  return n;
}

size_t cg_model_count_event(cg_model *m, uint64_t tid, cg_capture_mode thread_mode) {
  if (!m) return 0;
  size_t n = 0;
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++)
    for (open_entry *o = m->shard[i].open; o; o = o->next) {
      if (!cg_capture_prohibits(&o->cap, tid, thread_mode)) continue;
      o->cap.events++;
      n++;
    }
  return n;
}

size_t cg_model_open_captures(cg_model *m, cg_capture **out, size_t cap) {
  if (!m) return 0;
  size_t n = 0;
  oldest_walk w;
  walk_start(m, &w);
  for (open_entry *o; (o = walk_next(&w));) {
    if (out && n < cap) out[n] = &o->cap;
    n++;
  }
  return n;
}

cg_capture *cg_model_find_driver_id(cg_model *m, uint64_t driver_id) {
  if (!m || !driver_id) return NULL;
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++)
    for (open_entry *o = m->shard[i].open; o; o = o->next)
      if (o->cap.driver_id == driver_id) return &o->cap;
  return NULL;
}

static event_entry *find_event(const cg_model *m, uint64_t event) {
  event_entry *e = NULL;
  HASH_FIND(hh, m->events, &event, sizeof event, e);
  return e;
}

void cg_model_event_recorded(cg_model *m, uint64_t event, const cg_capture *into) {
  if (!m) return;
  event_entry *e = find_event(m, event);
  if (!into) { /* recorded outside any capture: a query is the driver's business again */
    if (e) {
      HASH_DEL(m->events, e);
      free(e);
    }
    return;
  }
  if (!e) {
    if (HASH_COUNT(m->events) >= CG_MODEL_MAX_EVENTS) return;
    e = calloc(1, sizeof *e);
    if (!e) return;
    e->event = event;
    HASH_ADD(hh, m->events, event, sizeof e->event, e);
    if (find_event(m, event) != e) { /* the add ran out of memory */
      free(e);
      return;
    }
  }
  e->stream = into->stream;
  e->capture_id = into->id;
}

cg_capture *cg_model_event_capture(cg_model *m, uint64_t event) {
  event_entry *e = m ? find_event(m, event) : NULL;
  if (!e) return NULL;
  open_entry *o = find_open(m, e->stream);
  return o && o->cap.id == e->capture_id ? &o->cap : NULL;
}

void cg_model_event_forget(cg_model *m, uint64_t event) {
  event_entry *e = m ? find_event(m, event) : NULL;
  if (!e) return;
  HASH_DEL(m->events, e);
  free(e);
}

bool cg_model_event_tracked(const cg_model *m, uint64_t event) { return m && find_event(m, event); }

void cg_model_forget_events_of(cg_model *m, uint64_t capture_id) {
  if (!m) return;
  event_entry *e, *tmp;
  HASH_ITER(hh, m->events, e, tmp) {
    if (e->capture_id != capture_id) continue;
    HASH_DEL(m->events, e);
    free(e);
  }
}

size_t cg_model_tracked_events(const cg_model *m) { return m ? HASH_COUNT(m->events) : 0; }
