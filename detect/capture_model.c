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
 * element out of the table, which cg_model_begin detects with a lookup. */
#define HASH_NONFATAL_OOM 1
#include <uthash.h>

/* Bounds on what a misbehaving process can make us allocate: captures whose
 * end we never see, or events recorded into captures and never recorded
 * again, would otherwise grow the tables forever. Real programs stay far
 * below both. */
#define CG_MODEL_MAX_OPEN 4096
#define CG_MODEL_MAX_EVENTS 65536

typedef struct {
  cg_capture cap;
  UT_hash_handle hh; /* key: cap.stream */
} open_entry;

/* An event last recorded into a capture: which one (stream and id, so that
 * a later capture on the same stream is not mistaken for it). */
typedef struct {
  uint64_t event;
  uint64_t stream, capture_id;
  UT_hash_handle hh; /* key: event */
} event_entry;

struct cg_model {
  open_entry *open;      /* uthash keeps insertion order: iteration is oldest first */
  event_entry *events;   /* events last recorded into a capture */
  uint64_t next_id;
  uint64_t begun;
};

cg_model *cg_model_new(void) {
  cg_model *m = calloc(1, sizeof *m);
  if (m) m->next_id = 1;
  return m;
}

void cg_model_free(cg_model *m) {
  if (!m) return;
  open_entry *o, *otmp;
  HASH_ITER(hh, m->open, o, otmp) {
    HASH_DEL(m->open, o);
    free(o);
  }
  event_entry *e, *etmp;
  HASH_ITER(hh, m->events, e, etmp) {
    HASH_DEL(m->events, e);
    free(e);
  }
  free(m);
}

static open_entry *find_open(const cg_model *m, uint64_t stream) {
  open_entry *o = NULL;
  HASH_FIND(hh, m->open, &stream, sizeof stream, o);
  return o;
}

cg_capture *cg_model_begin(cg_model *m, uint64_t stream, uint64_t context, cg_capture_mode mode,
                           uint64_t tid, bool into_graph, uint64_t now_ns, void *user) {
  if (!m || find_open(m, stream)) return NULL;
  if (HASH_COUNT(m->open) >= CG_MODEL_MAX_OPEN) return NULL;
  open_entry *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->cap.id = m->next_id;
  o->cap.stream = stream;
  o->cap.context = context;
  o->cap.tid = tid;
  o->cap.mode = mode;
  o->cap.status = CG_CAPTURE_ACTIVE;
  o->cap.into_graph = into_graph;
  o->cap.begin_ns = now_ns;
  o->cap.user = user;
  HASH_ADD(hh, m->open, cap.stream, sizeof o->cap.stream, o);
  if (find_open(m, stream) != o) { /* the add ran out of memory */
    free(o);
    return NULL;
  }
  m->next_id++;
  m->begun++;
  return &o->cap;
}

int cg_model_end(cg_model *m, uint64_t stream, bool driver_ok, uint64_t now_ns, cg_capture *out) {
  open_entry *o = m ? find_open(m, stream) : NULL;
  if (!o) return -1;
  HASH_DEL(m->open, o);
  o->cap.status = driver_ok ? CG_CAPTURE_ENDED : CG_CAPTURE_FAILED;
  o->cap.end_ns = now_ns;
  if (out) *out = o->cap;
  free(o);
  return 0;
}

cg_capture *cg_model_find(cg_model *m, uint64_t stream) {
  open_entry *o = m ? find_open(m, stream) : NULL;
  return o ? &o->cap : NULL;
}

size_t cg_model_open_count(const cg_model *m) { return m ? HASH_COUNT(m->open) : 0; }

uint64_t cg_model_begun_total(const cg_model *m) { return m ? m->begun : 0; }

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
  for (open_entry *o = m->open; o; o = o->hh.next) {
    if (!cg_capture_prohibits(&o->cap, tid, thread_mode)) continue;
    if (out && n < cap) out[n] = &o->cap;
    n++;
  }
  return n;
}

size_t cg_model_count_event(cg_model *m, uint64_t tid, cg_capture_mode thread_mode) {
  if (!m) return 0;
  size_t n = 0;
  for (open_entry *o = m->open; o; o = o->hh.next) {
    if (!cg_capture_prohibits(&o->cap, tid, thread_mode)) continue;
    o->cap.events++;
    n++;
  }
  return n;
}

size_t cg_model_open_captures(cg_model *m, cg_capture **out, size_t cap) {
  if (!m) return 0;
  size_t n = 0;
  for (open_entry *o = m->open; o; o = o->hh.next) {
    if (out && n < cap) out[n] = &o->cap;
    n++;
  }
  return n;
}

cg_capture *cg_model_find_driver_id(cg_model *m, uint64_t driver_id) {
  if (!m || !driver_id) return NULL;
  for (open_entry *o = m->open; o; o = o->hh.next)
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
