/* Which captures a call breaks, and marking them broken with their first
 * offender: the rules of the calls that break captures on every driver
 * (live_captures.h, cg_rule), and the events recorded into captures that the
 * 907 rule needs. Part of the capture bookkeeping (live_captures.c holds the
 * model and its lock). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "live_captures.h"
#include "model_lock.h"
#include "capguard/clock.h"
#include "config.h"
#include "driver.h"
#include "forks.h"
#include "query_fence.h"
#include "warn.h"

/* The most captures one call is counted against or marks broken: more open
 * at once than any real program holds (vLLM captures one at a time). */
#define CG_HIT_MAX 64

/* What the driver says of the capture on s (cuStreamGetCaptureInfo,
 * allowed during capture): false when it cannot say. */
static bool driver_capture_state(CUstream s, CUstreamCaptureStatus *st, uint64_t *id) {
  cuuint64_t raw = 0;
  *st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!cg_drv.StreamGetCaptureInfo || cg_drv.StreamGetCaptureInfo(s, st, &raw) != CUDA_SUCCESS)
    return false;
  *id = (uint64_t)raw;
  return true;
}

bool cg_captures_driver_state(CUstream s, bool ptsz, CUstreamCaptureStatus *st, uint64_t *id) {
  if (ptsz && s == NULL)
    s = CU_STREAM_PER_THREAD;
  *id = 0;
  return driver_capture_state(s, st, id);
}

void cg_captures_break_prohibitors(cg_event *e, cg_verdict v, CUresult r, const cg_begin_site *where) {
  cg_hit hit = {.cls = CG_HIT_PROHIBITED, .first = e->capture};
  cg_break b = cg_break_of(e->call, e->kind, v, r, where);
  cg_captures_break(&hit, &b, v == CG_VERDICT_EMULATED);
  e->capture.status = CG_CAPTURE_INVALIDATED;
}

uint64_t cg_captures_driver_id(CUstream s, bool ptsz) {
  if (ptsz && s == NULL)
    s = CU_STREAM_PER_THREAD; /* the _ptsz variant's NULL is this thread's stream */
  CUstreamCaptureStatus st;
  uint64_t id = 0;
  if (!driver_capture_state(s, &st, &id) || st == CU_STREAM_CAPTURE_STATUS_NONE)
    return 0;
  return id;
}

/* The open capture a stream belongs to: where it began, or (joined_id) the
 * one the driver says it joined. */
static cg_capture *capture_of_stream(cg_model *m, uint64_t key, uint64_t joined_id) {
  cg_capture *c = cg_model_find(m, key);
  return c ? c : cg_model_find_driver_id(m, joined_id);
}

static void set_first(cg_hit *hit, cg_hit_class cls, const cg_capture *c, size_t n) {
  hit->cls = cls;
  hit->first = *c;
  hit->n = n;
  if (c->user)
    hit->site = *(const cg_begin_site *)c->user;
}

/* The open captures of a context (a synchronisation of it waits for their
 * streams), oldest first; up to cap written, the total returned. */
static size_t captures_of_context(cg_model *m, uint64_t ctx, cg_capture **out, size_t cap) {
  cg_capture *all[CG_HIT_MAX];
  size_t n = cg_model_open_captures(m, all, CG_HIT_MAX), k = 0;
  for (size_t i = 0; i < n && i < CG_HIT_MAX; i++) {
    if (all[i]->context != ctx && all[i]->context && ctx) /* unknown on either side: counted */
      continue;
    if (k < cap)
      out[k] = all[i];
    k++;
  }
  return k;
}

/* Legacy-stream work (third matrix): the blocking captures of the context,
 * or, when there are none, the calling thread's own capture of it, whose
 * graph the work escapes. */
static void judge_legacy(cg_model *m, uint64_t ctx, uint64_t tid, cg_hit *hit) {
  cg_capture *all[CG_HIT_MAX], *own = NULL, *first = NULL;
  size_t n = captures_of_context(m, ctx, all, CG_HIT_MAX), blocking = 0;
  for (size_t i = 0; i < n && i < CG_HIT_MAX; i++) {
    if (!all[i]->nonblocking) {
      if (!first)
        first = all[i];
      blocking++;
      all[i]->events++;
    } else if (!own && all[i]->tid == tid) {
      own = all[i];
    }
  }
  if (first) {
    set_first(hit, CG_HIT_LEGACY, first, blocking);
    hit->context = ctx;
  } else if (own) {
    set_first(hit, CG_HIT_ESCAPE, own, 1);
    own->events++;
  }
}

/* The legacy stream: the NULL handle of a non-_ptsz entry point, or
 * CU_STREAM_LEGACY by name. */
static bool legacy_stream(uint64_t s, bool ptsz) {
  return (s == 0 && !ptsz) || s == (uint64_t)(uintptr_t)CU_STREAM_LEGACY;
}

/* Host memory the driver does not know as page-locked (or device) memory:
 * a captured copy from or into it reads or writes it at replay. A query,
 * allowed mid-capture; unknown (no such entry point) counts as not
 * pageable: nothing is said. */
static bool pageable(const void *p) {
  unsigned type = 0;
  return p && cg_drv.PointerGetAttribute &&
         cg_drv.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) ==
             CUDA_ERROR_INVALID_VALUE;
}

uint64_t cg_captures_pageable(const void *a, const void *b) {
  return pageable(a) ? (uint64_t)(uintptr_t)a : pageable(b) ? (uint64_t)(uintptr_t)b : 0;
}

static void judge(cg_rule rule, uint64_t target, bool ptsz, uint64_t aux, uint64_t joined_id, cg_hit *hit) {
  memset(hit, 0, sizeof *hit);
  uint64_t tid = cg_self_tid();
  cg_capture_mode mode = cg_self_mode();
  cg_model *m = cg_captures_model_lock();
  if (!m) {
    cg_captures_model_unlock();
    return;
  }
  cg_capture *c = NULL;
  if (rule == CG_RULE_LEGACY || rule == CG_RULE_WAIT_EVENT || rule == CG_RULE_CAPTURING ||
      rule == CG_RULE_COPY_ASYNC) {
    if (rule == CG_RULE_LEGACY) {
      judge_legacy(m, target, tid, hit);
    } else if (rule == CG_RULE_COPY_ASYNC) {
      /* target: the context for the legacy stream, else the stream; aux:
       * set (1) when the source is pageable (asked before the lock). */
      if (aux == UINT64_MAX)
        judge_legacy(m, target, tid, hit);
      else if (aux == 1 && (c = capture_of_stream(m, cg_stream_key((CUstream)(uintptr_t)target, ptsz), joined_id))) {
        set_first(hit, CG_HIT_PAGEABLE, c, 1);
        c->events++;
      }
    } else {
      c = capture_of_stream(m, cg_stream_key((CUstream)(uintptr_t)target, ptsz), joined_id);
      if (rule == CG_RULE_WAIT_EVENT) {
        cg_capture *in = cg_model_event_capture(m, aux);
        hit->event_capture = in ? in->id : 0;
        hit->stream_captures = c != NULL;
        /* A wait on an event recorded into this very capture is a join: fine. */
        if (c && in == c)
          c = NULL;
      }
      if (c) {
        set_first(hit, CG_HIT_STREAM, c, 1);
        c->events++;
      }
    }
    cg_captures_model_unlock();
    return;
  }
  if (rule == CG_RULE_STREAM)
    c = capture_of_stream(m, cg_stream_key((CUstream)(uintptr_t)target, ptsz), joined_id);
  else if (rule == CG_RULE_EVENT)
    c = cg_model_event_capture(m, target);
  if (c) {
    set_first(hit, rule == CG_RULE_STREAM ? CG_HIT_STREAM : CG_HIT_EVENT, c, 1);
    c->events++;
  } else if (rule == CG_RULE_ANY) {
    cg_capture *all[CG_HIT_MAX];
    size_t n = captures_of_context(m, target, all, CG_HIT_MAX);
    if (n) {
      set_first(hit, CG_HIT_ANY, all[0], n);
      hit->context = target;
      for (size_t i = 0; i < n && i < CG_HIT_MAX; i++)
        all[i]->events++;
    }
  } else {
    cg_capture *p[1];
    size_t n = cg_model_prohibitors(m, tid, mode, p, 1);
    if (n) {
      set_first(hit, CG_HIT_PROHIBITED, p[0], n);
      cg_model_count_event(m, tid, mode);
    }
  }
  cg_captures_model_unlock();
}

/* The context a cuCtxSynchronize waits for: its argument, or the calling
 * thread's (0 when unknown: then every open capture counts). */
static uint64_t context_of(uint64_t target) {
  CUcontext c = NULL;
  if (!target && cg_drv.CtxGetCurrent)
    cg_drv.CtxGetCurrent(&c);
  return target ? target : (uint64_t)(uintptr_t)c;
}

static bool on_stream(cg_rule rule) {
  return rule == CG_RULE_STREAM || rule == CG_RULE_WAIT_EVENT || rule == CG_RULE_CAPTURING ||
         rule == CG_RULE_COPY_ASYNC;
}

void cg_captures_judge_aux(cg_rule rule, uint64_t target, bool ptsz, uint64_t aux, cg_hit *hit) {
  if (rule == CG_RULE_COPY_ASYNC) {
    /* On the legacy stream: legacy-stream work (aux UINT64_MAX says so to
     * judge); elsewhere, only a copy with a pageable host side (aux, found
     * by cg_captures_pageable) is news. */
    if (legacy_stream(target, ptsz)) {
      judge(rule, context_of(0), false, UINT64_MAX, 0, hit);
      return;
    }
    if (!aux) {
      memset(hit, 0, sizeof *hit);
      return;
    }
    aux = 1;
  }
  /* Asked before the model's lock: the driver is never called with it held. */
  uint64_t joined = on_stream(rule) ? cg_captures_driver_id((CUstream)(uintptr_t)target, ptsz) : 0;
  /* Legacy-stream work meets the captures of the caller's context. */
  uint64_t t = rule == CG_RULE_ANY ? context_of(target) : rule == CG_RULE_LEGACY ? context_of(0) : target;
  judge(rule, t, ptsz, aux, joined, hit);
}

void cg_captures_judge_gated(cg_rule rule, uint64_t target, bool ptsz, cg_hit *hit) {
  judge(rule, rule == CG_RULE_ANY ? context_of(target) : target, ptsz, 0, 0, hit);
}

cg_break cg_break_of(const char *call, cg_event_kind kind, cg_verdict v, CUresult r, const cg_begin_site *site) {
  cg_break b = {.who = {.call = call, .kind = kind, .verdict = v, .result = (int)r, .tid = cg_self_tid(),
                        .time_ns = cg_now_ns()}};
  if (site)
    b.site = *site;
  return b;
}

/* One capture broken: invalidated, and b its first offender if it was
 * active (an already invalid capture was broken by something earlier). */
static void mark(cg_capture *c, const cg_break *b, bool emulated) {
  if (c->status != CG_CAPTURE_ACTIVE)
    return;
  c->status = CG_CAPTURE_INVALIDATED;
  if (emulated)
    c->emulated = true;
  if (!c->broken_by && b) {
    cg_break *copy = malloc(sizeof *copy);
    if (copy)
      *copy = *b;
    c->broken_by = copy; /* out of memory: the capture record says none was seen, and the event still names it */
  }
}

void cg_captures_break(const cg_hit *hit, const cg_break *b, bool emulated) {
  if (hit->cls == CG_HIT_NONE)
    return;
  cg_model *m = cg_captures_model_lock();
  if (m) {
    if (hit->cls == CG_HIT_STREAM || hit->cls == CG_HIT_EVENT || hit->cls == CG_HIT_ESCAPE) {
      cg_capture *c = cg_model_find(m, hit->first.stream);
      if (c && c->id == hit->first.id)
        mark(c, b, emulated);
    } else if (hit->cls == CG_HIT_LEGACY) {
      cg_capture *all[CG_HIT_MAX];
      size_t n = captures_of_context(m, hit->context, all, CG_HIT_MAX);
      for (size_t i = 0; i < n && i < CG_HIT_MAX; i++)
        if (!all[i]->nonblocking)
          mark(all[i], b, emulated);
    } else {
      cg_capture *all[CG_HIT_MAX];
      size_t n = hit->cls == CG_HIT_ANY ? captures_of_context(m, hit->context, all, CG_HIT_MAX)
                                        : cg_model_prohibitors(m, cg_self_tid(), cg_self_mode(), all, CG_HIT_MAX);
      for (size_t i = 0; i < n && i < CG_HIT_MAX; i++)
        mark(all[i], b, emulated);
    }
  }
  cg_captures_model_unlock();
}

void cg_captures_attribute_refusal(const cg_hit *hit, const cg_break *b) {
  if (hit->cls == CG_HIT_NONE)
    return;
  typedef struct {
    uint64_t stream, id;
  } ref;
  ref refs[CG_HIT_MAX];
  size_t n = 0;
  cg_model *m = cg_captures_model_lock();
  if (m) {
    cg_capture *all[CG_HIT_MAX];
    size_t k;
    if (hit->cls == CG_HIT_STREAM || hit->cls == CG_HIT_EVENT) {
      all[0] = cg_model_find(m, hit->first.stream);
      k = all[0] && all[0]->id == hit->first.id ? 1 : 0;
    } else {
      k = hit->cls == CG_HIT_ANY ? captures_of_context(m, hit->context, all, CG_HIT_MAX)
                                 : cg_model_prohibitors(m, cg_self_tid(), cg_self_mode(), all, CG_HIT_MAX);
    }
    for (size_t i = 0; i < k && i < CG_HIT_MAX; i++)
      if (all[i]->status == CG_CAPTURE_ACTIVE && (all[i]->stream & 3) != 3)
        refs[n++] = (ref){all[i]->stream, all[i]->id};
  }
  cg_captures_model_unlock();
  /* The driver asked with the model's lock released; the streams lock
   * (held) keeps every stream asked about from being destroyed. */
  bool invalid[CG_HIT_MAX];
  for (size_t i = 0; i < n; i++) {
    CUstreamCaptureStatus st;
    uint64_t id;
    invalid[i] = driver_capture_state((CUstream)(uintptr_t)refs[i].stream, &st, &id) &&
                 st == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  }
  m = cg_captures_model_lock();
  for (size_t i = 0; m && i < n; i++) {
    cg_capture *c = invalid[i] ? cg_model_find(m, refs[i].stream) : NULL;
    if (c && c->id == refs[i].id)
      mark(c, b, false);
  }
  cg_captures_model_unlock();
}

void cg_captures_count_repeat(const cg_hit *hit) {
  cg_model *m = cg_captures_model_lock();
  cg_capture *c = m ? cg_model_find(m, hit->first.stream) : NULL;
  if (c && c->id == hit->first.id)
    c->repeats++;
  cg_captures_model_unlock();
}

void cg_captures_event_record_begin(uint64_t event, CUstream s, bool ptsz, cg_record_mark *mk) {
  *mk = (cg_record_mark){.event = event};
  uint64_t key = cg_stream_key(s, ptsz);
  cg_fork_event_recorded(key, event);
  cg_model *m = cg_captures_model_lock();
  cg_capture *c = m ? cg_model_find(m, key) : NULL;
  cg_captures_model_unlock();
  uint64_t joined = 0;
  if (!c && m) /* not where a capture began: it may have joined one; only the driver knows */
    joined = cg_captures_driver_id(s, ptsz);
  bool wait = false;
  m = cg_captures_model_lock();
  c = !m ? NULL : joined ? cg_model_find_driver_id(m, joined) : cg_model_find(m, key);
  if (c) {
    mk->was_tracked = cg_model_event_tracked(m, event);
    wait = cg_model_event_capture(m, event) != c; /* already marked in it: no query can meet it unmarked */
    cg_model_event_recorded(m, event, c);
    mk->marked = true;
  }
  cg_captures_model_unlock();
  /* A query that judged the event not captured before the mark leaves the
   * driver before the driver records the event into the capture. */
  if (wait && cg_cfg.mode == CG_RUN_GUARD)
    cg_query_fence_wait(false);
}

void cg_captures_event_record_end(const cg_record_mark *mk, CUresult r) {
  if (r == CUDA_SUCCESS && mk->marked)
    return;
  if (r != CUDA_SUCCESS && (!mk->marked || mk->was_tracked))
    return; /* refused: the event is as it was (a mark over an older one stays: a query of it waits) */
  cg_model *m = cg_captures_model_lock();
  /* recorded outside any capture: queries are the driver's again; or the
   * driver refused the record into the capture: undone */
  cg_model_event_forget(m, mk->event);
  cg_captures_model_unlock();
}

void cg_captures_event_destroyed(uint64_t event) {
  cg_model *m = cg_captures_model_lock();
  cg_model_event_forget(m, event);
  cg_captures_model_unlock();
}

/* The model's capture c, still open and active, or NULL. */
static bool still_active(const cg_capture *c) {
  cg_model *m = cg_captures_model_lock();
  cg_capture *open = m ? cg_model_find(m, c->stream) : NULL;
  bool yes = open && open->id == c->id && open->status == CG_CAPTURE_ACTIVE;
  cg_captures_model_unlock();
  return yes;
}

/* Watched calls on their way to the driver that may break a capture, until
 * their breaks are marked (cg_captures_watched_enter/_leave). While one is,
 * a capture the driver holds invalid may be that call's break, not marked
 * yet: it is not taken for an unwatched call's. */
static unsigned watched_in_flight;
void cg_captures_watched_enter(void) { __atomic_add_fetch(&watched_in_flight, 1, __ATOMIC_SEQ_CST); }
void cg_captures_watched_leave(void) { __atomic_sub_fetch(&watched_in_flight, 1, __ATOMIC_SEQ_CST); }

bool cg_captures_lacks_offender(uint64_t key) {
  cg_model *m = cg_captures_model_lock();
  cg_capture *c = m ? cg_model_find(m, key) : NULL;
  bool lacks = c && !c->broken_by;
  cg_captures_model_unlock();
  return lacks;
}

void cg_captures_await_offender(uint64_t key) {
  uint64_t start = cg_monotonic_ns();
  for (unsigned spins = 0;; spins++) {
    cg_model *m = cg_captures_model_lock();
    cg_capture *c = m ? cg_model_find(m, key) : NULL;
    bool done = !c || c->broken_by || !__atomic_load_n(&watched_in_flight, __ATOMIC_SEQ_CST);
    cg_captures_model_unlock();
    if (done || cg_monotonic_ns() - start > 20000000ull)
      return;
    if (spins < 64) {
      sched_yield();
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

void cg_captures_check_driver_state_gated(const cg_capture *c) {
  /* Nothing to learn of a capture the model holds broken already, or of a
   * per-thread default stream (a key with its two low bits set), which
   * only its own thread can name to the driver. The capture must still be
   * open in the model: then its stream was not destroyed (a destroy drops
   * it under the streams lock held exclusive). */
  if (!c->id || c->status != CG_CAPTURE_ACTIVE || (c->stream & 3) == 3 || !still_active(c))
    return;
  CUstreamCaptureStatus st;
  uint64_t id;
  if (!driver_capture_state((CUstream)(uintptr_t)c->stream, &st, &id) ||
      st != CU_STREAM_CAPTURE_STATUS_INVALIDATED || __atomic_load_n(&watched_in_flight, __ATOMIC_SEQ_CST))
    return;
  cg_model *m = cg_captures_model_lock();
  cg_capture *open = m ? cg_model_find(m, c->stream) : NULL;
  if (open && open->id == c->id && open->status == CG_CAPTURE_ACTIVE)
    open->status = CG_CAPTURE_INVALIDATED; /* broken, by nothing capguard saw */
  cg_captures_model_unlock();
}

void cg_captures_break_logged(int code, const cg_break *b) {
  cg_capture *all[CG_HIT_MAX], *pick[CG_HIT_MAX];
  size_t k = 0;
  uint64_t tid = cg_self_tid();
  cg_model *m = cg_captures_model_lock();
  if (m) {
    size_t n = cg_model_open_captures(m, all, CG_HIT_MAX);
    if (n > CG_HIT_MAX)
      n = CG_HIT_MAX;
    /* Which captures the refusal broke, by what the driver's rules say of it. */
    for (size_t i = 0; i < n; i++) {
      bool hit = code == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT ? !all[i]->nonblocking
                                                             : cg_capture_prohibits(all[i], tid, cg_self_mode());
      if (hit && all[i]->status == CG_CAPTURE_ACTIVE)
        pick[k++] = all[i];
    }
    for (size_t i = 0; !k && i < n; i++)
      if (all[i]->tid == tid && all[i]->status == CG_CAPTURE_ACTIVE)
        pick[k++] = all[i];
    for (size_t i = 0; !k && i < n; i++)
      if (all[i]->status == CG_CAPTURE_ACTIVE)
        pick[k++] = all[i];
    for (size_t i = 0; i < k; i++)
      mark(pick[i], b, false);
  }
  cg_captures_model_unlock();
}

void cg_captures_check_driver_state(const cg_capture *c) {
  if (!c->id || c->status != CG_CAPTURE_ACTIVE || (c->stream & 3) == 3)
    return;
  cg_streams_ask_lock();
  cg_captures_check_driver_state_gated(c);
  cg_streams_unlock();
}
