/* Which captures a call breaks, and marking them broken with their first
 * offender: the rules of the calls that break captures on every driver
 * (break_rules.h, cg_rule), and the events recorded into captures that the
 * 907 rule needs. Part of the capture bookkeeping (live_captures.c holds the
 * model and its lock). */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "break_rules.h"
#include "live_captures.h"
#include "model_lock.h"
#include "capguard/clock.h"
#include "config.h"
#include "driver.h"
#include "forks.h"
#include "query_fence.h"
#include "tick_slots.h"
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

/* The driver's ids of the open captures the model knows none of, asked when
 * a call on a stream that joined a capture (joined: the driver's id of its
 * capture) needs them to find that capture: a begin no longer asks (a
 * driver call at every begin, for what only a joined stream's calls need).
 * A capture on a per-thread stream was asked at its begin (only its own
 * thread can name that stream); one whose end is on its way stays unknown
 * (the stream may capture another sequence by the time the driver answers).
 * The streams lock, held from before the model is read until the answers
 * are in, keeps every stream asked about from being destroyed. */
static void learn_driver_ids(uint64_t key, uint64_t joined) {
  struct {
    uint64_t stream, id, driver_id;
  } ask[CG_HIT_MAX];
  size_t n = 0;
  cg_streams_ask_lock();
  cg_model *m = cg_captures_model_lock();
  if (m && !cg_model_find(m, key) && !cg_model_find_driver_id(m, joined)) {
    cg_capture *all[CG_HIT_MAX];
    size_t k = cg_model_open_captures(m, all, CG_HIT_MAX);
    for (size_t i = 0; i < k && i < CG_HIT_MAX; i++)
      if (!all[i]->driver_id && !cg_stream_key_per_thread(all[i]->stream) && !cg_captures_end_tick(all[i]))
        ask[n++].stream = all[i]->stream, ask[n - 1].id = all[i]->id;
  }
  cg_captures_model_unlock();
  for (size_t i = 0; i < n; i++) {
    CUstreamCaptureStatus st;
    ask[i].driver_id = 0;
    if (!driver_capture_state((CUstream)(uintptr_t)ask[i].stream, &st, &ask[i].driver_id) ||
        st == CU_STREAM_CAPTURE_STATUS_NONE)
      ask[i].driver_id = 0;
  }
  m = n ? cg_captures_model_lock() : NULL;
  for (size_t i = 0; m && i < n; i++) {
    cg_capture *c = cg_model_find(m, ask[i].stream);
    if (c && c->id == ask[i].id && !c->driver_id && !cg_captures_end_tick(c))
      c->driver_id = ask[i].driver_id;
  }
  if (n)
    cg_captures_model_unlock();
  cg_streams_unlock();
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
  if (joined)
    learn_driver_ids(cg_stream_key((CUstream)(uintptr_t)target, ptsz), joined);
  /* Legacy-stream work meets the captures of the caller's context. */
  uint64_t t = rule == CG_RULE_ANY ? context_of(target) : rule == CG_RULE_LEGACY ? context_of(0) : target;
  judge(rule, t, ptsz, aux, joined, hit);
}

void cg_captures_judge_gated(cg_rule rule, uint64_t target, bool ptsz, cg_hit *hit) {
  judge(rule, rule == CG_RULE_ANY ? context_of(target) : target, ptsz, 0, 0, hit);
}

/* Watched calls on their way to the driver that may break a capture, until
 * their breaks are marked (cg_captures_watched_enter/_leave), and of those
 * the ones the driver refused (cg_captures_refusal_*). While one is, a
 * capture the driver holds invalid may be that call's break, not marked
 * yet: it is not taken for an unwatched call's, and an end waits for it. */
static unsigned watched_in_flight, refusals_pending;
/* The refusals pending, each in a slot holding the earliest tick at which
 * the driver may have made it (1: unknown; tick_slots.h); past the last
 * slot an end waits as for an early one. */
static cg_tick_slots pending;
static __thread int pending_slot __attribute__((tls_model("initial-exec"))); /* slot + 1; 0: none */
static __thread unsigned watched_depth __attribute__((tls_model("initial-exec")));
static __thread uint64_t watched_tick0 __attribute__((tls_model("initial-exec")));
static __thread uint64_t refusal_tick __attribute__((tls_model("initial-exec")));
static __thread bool refusal_counted __attribute__((tls_model("initial-exec")));

void cg_captures_watched_enter(void) {
  if (!watched_depth++) {
    watched_tick0 = cg_captures_tick();
    refusal_tick = 0;
  }
  __atomic_add_fetch(&watched_in_flight, 1, __ATOMIC_SEQ_CST);
}
void cg_captures_watched_enter_late(void) {
  if (!watched_depth++)
    watched_tick0 = 0; /* made before now, when unknown; refusal_tick may hold the driver's */
  __atomic_add_fetch(&watched_in_flight, 1, __ATOMIC_SEQ_CST);
}
void cg_captures_watched_leave(void) {
  __atomic_sub_fetch(&watched_in_flight, 1, __ATOMIC_SEQ_CST);
  if (watched_depth && !--watched_depth) {
    if (refusal_counted) {
      cg_tick_slots_give(&pending, pending_slot);
      pending_slot = 0;
      __atomic_sub_fetch(&refusals_pending, 1, __ATOMIC_SEQ_CST);
    }
    refusal_counted = false;
    refusal_tick = 0;
    watched_tick0 = 0;
  }
}
static void count_refusal(void) {
  if (refusal_counted)
    return;
  refusal_counted = true;
  uint64_t since = refusal_tick ? refusal_tick : watched_tick0 ? watched_tick0 : 1;
  pending_slot = cg_tick_slots_take(&pending, since, cg_self_tid());
  __atomic_add_fetch(&refusals_pending, 1, __ATOMIC_SEQ_CST);
}

/* Whether a refusal the driver may have made before tick is pending. */
static bool pending_before(uint64_t tick) { return cg_tick_slots_before(&pending, tick); }
void cg_captures_watched_atfork_child(void) {
  /* The other threads' calls never leave; this thread's, if it forked
   * inside one (it cannot: no fork is made there), would leave as usual. */
  cg_tick_slots_reset(&pending, refusal_counted, pending_slot, 1);
  refusals_pending = refusal_counted ? 1 : 0;
  watched_in_flight = watched_depth;
}
/* Asked by a begin the driver accepted only where the answer may be
 * needed: on a per-thread stream (no other thread can ask of it later), or
 * when a call that may break it could have met its begin in the driver (a
 * watched call or a fast-path breaker on its way, a refusal not yet marked):
 * then whether the driver held it active, or already invalid, as it began
 * tells that call's refusal from another's (cg_captures_attribute, mark).
 * Otherwise no driver call: its id is learnt when a joined stream needs it
 * (learn_driver_ids). */
uint64_t cg_captures_begun_driver_id(CUstream s, bool ptsz, uint64_t key) {
  if (!cg_stream_key_per_thread(key) && !__atomic_load_n(&watched_in_flight, __ATOMIC_SEQ_CST) &&
      !__atomic_load_n(&refusals_pending, __ATOMIC_SEQ_CST) && !cg_fence_busy(CG_FENCE_BREAKERS))
    return 0;
  uint64_t before = cg_captures_tick(), id = 0; /* the driver's begin has returned */
  CUstreamCaptureStatus st;
  if (!cg_captures_driver_state(s, ptsz, &st, &id) || st == CU_STREAM_CAPTURE_STATUS_NONE)
    id = 0;
  cg_captures_note_begun_state(before, id && st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? before : 0,
                               id && st == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? cg_captures_tick() : 0);
  return id;
}

void cg_captures_refusal_returned(void) {
  if (watched_depth)
    count_refusal();
}
void cg_captures_refusal_in_driver(int code) {
  if (cg_cfg.mode == CG_RUN_OFF)
    return;
  /* A watched call of this thread, or a breaker's fast path (in the
   * breakers' fence), whose wrapper reports this refusal (900 and 907:
   * breaker_wrappers.c) and so leaves the watched region after it. */
  if (!watched_depth && !(cg_breaker_in_flight() &&
                          (code == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || code == CUDA_ERROR_CAPTURED_EVENT)))
    return;
  if (!refusal_tick)
    refusal_tick = cg_captures_tick();
  count_refusal();
}

cg_break cg_break_of(const char *call, cg_event_kind kind, cg_verdict v, CUresult r, const cg_begin_site *site) {
  cg_break b = {.who = {.call = call, .kind = kind, .verdict = v, .result = (int)r, .tid = cg_self_tid(),
                        .time_ns = cg_now_ns()}};
  if (site)
    b.site = *site;
  if (watched_depth) { /* the call returned from the driver: now is after it */
    b.tick0 = watched_tick0;
    b.tick1 = cg_captures_tick();
    b.in_driver = refusal_tick;
  }
  return b;
}

/* Whether the driver surely refused a before x (x is then not the first
 * offender where a is). */
static bool surely_earlier(const cg_break *a, const cg_break *x) {
  if (a->in_driver && x->in_driver)
    return a->in_driver < x->in_driver;
  return a->tick1 && x->tick0 && a->tick1 < x->tick0;
}

/* Puts b in *slot (a first offender): if empty, or if b surely came first. */
static void offer(void **slot, const cg_break *b) {
  if (*slot && !surely_earlier(b, *slot))
    return;
  cg_break *copy = *slot ? *slot : malloc(sizeof *copy);
  if (copy)
    *copy = *b;
  *slot = copy; /* out of memory: the capture record says none was seen, and the event still names it */
}

/* One capture broken: invalidated, and b its first offender unless a call
 * surely made before broke it (one capguard does not watch, seen as such,
 * or a watched one already marked). */
static void mark(cg_capture *c, const cg_break *b, bool emulated) {
  if (c->unwatched_break)
    return;
  if (emulated && c->status == CG_CAPTURE_ACTIVE)
    c->emulated = true;
  c->status = CG_CAPTURE_INVALIDATED;
  if (!b)
    return;
  /* The driver held it invalid as it began: broken first by a call it
   * refused before then; one surely refused later broke it only again. */
  uint64_t lo = b->in_driver ? b->in_driver : b->tick0;
  if (c->invalid_tick && lo > c->invalid_tick) {
    if (!c->broken_by)
      offer(&c->maybe_by, b);
    return;
  }
  offer(&c->broken_by, b);
}

/* The captures a hit names, in the model now. */
static size_t hit_captures(cg_model *m, const cg_hit *hit, cg_capture **out, size_t cap) {
  if (hit->cls == CG_HIT_NONE)
    return 0;
  if (hit->cls == CG_HIT_STREAM || hit->cls == CG_HIT_EVENT || hit->cls == CG_HIT_ESCAPE) {
    cg_capture *c = cg_model_find(m, hit->first.stream);
    if (!c || c->id != hit->first.id || !cap)
      return 0;
    out[0] = c;
    return 1;
  }
  cg_capture *all[CG_HIT_MAX];
  size_t n = hit->cls == CG_HIT_LEGACY || hit->cls == CG_HIT_ANY
                 ? captures_of_context(m, hit->context, all, CG_HIT_MAX)
                 : cg_model_prohibitors(m, cg_self_tid(), cg_self_mode(), all, CG_HIT_MAX);
  size_t k = 0;
  for (size_t i = 0; i < n && i < CG_HIT_MAX && k < cap; i++)
    if (hit->cls != CG_HIT_LEGACY || !all[i]->nonblocking)
      out[k++] = all[i];
  return k;
}

void cg_captures_break(const cg_hit *hit, const cg_break *b, bool emulated) {
  if (hit->cls == CG_HIT_NONE)
    return;
  cg_model *m = cg_captures_model_lock();
  if (m) {
    cg_capture *all[CG_HIT_MAX];
    size_t n = hit_captures(m, hit, all, CG_HIT_MAX);
    for (size_t i = 0; i < n; i++)
      mark(all[i], b, emulated);
  }
  cg_captures_model_unlock();
}

/* How a refusal met a capture (cg_captures_attribute). */
enum { MET_NOT, MET_SURELY, MET_ASK, MET_MAYBE, MET_MAYBE_INVALID };

void cg_captures_attribute(const cg_hit *judged, cg_rule rule, uint64_t target, bool ptsz, const cg_break *b,
                           cg_hit *now_out) {
  /* When the driver refused it: inside [lo, hi] on the shim's clock (the
   * driver's log callback pins it; 0: unknown). */
  uint64_t lo = b->in_driver ? b->in_driver : b->tick0, hi = b->in_driver ? b->in_driver : b->tick1;
  cg_captures_await_begins_before(hi ? hi : cg_captures_tick());
  cg_streams_ask_lock();
  /* A query refused with 907 met the event's capture; any other refusal of
   * an event call, the captures that prohibit the thread. */
  cg_rule now_rule = rule == CG_RULE_EVENT && b->who.result != CUDA_ERROR_CAPTURED_EVENT ? CG_RULE_PROHIBITED : rule;
  cg_hit now;
  cg_captures_judge_gated(now_rule, target, ptsz, &now);
  typedef struct {
    uint64_t stream, id, driver_id;
    int met;
    uint64_t learnt; /* the driver's id, asked of a capture whose id was not known (0: none) */
  } ref;
  ref refs[2 * CG_HIT_MAX];
  size_t n = 0;
  cg_model *m = cg_captures_model_lock();
  if (m) {
    cg_capture *all[2 * CG_HIT_MAX];
    size_t k = judged ? hit_captures(m, judged, all, CG_HIT_MAX) : 0;
    k += hit_captures(m, &now, all + k, CG_HIT_MAX);
    for (size_t i = 0; i < k; i++) {
      cg_capture *c = all[i];
      bool seen = false;
      for (size_t j = 0; j < i; j++)
        seen |= all[j] == c;
      /* begun after the driver refused the call, or still active after it */
      if (seen || (hi && (c->begin_tick[0] > hi || c->active_tick > hi)))
        continue;
      bool begun = lo && c->begin_tick[1] && c->begin_tick[1] < lo;
      uint64_t end_tick = cg_captures_end_tick(c);
      bool open_after = !end_tick || (hi && end_tick > hi);
      /* Surely open when the driver refused the call: the call broke it (a
       * refusal breaks every capture its rule names). Its begin raced the
       * call: the driver says whether it is still active. Its end raced the
       * call: it may have been over. */
      int met = begun && open_after ? MET_SURELY : open_after && !cg_stream_key_per_thread(c->stream) ? MET_ASK : MET_MAYBE;
      refs[n++] = (ref){c->stream, c->id, c->driver_id, met, 0};
    }
  }
  cg_captures_model_unlock();
  /* The driver asked with the model's lock released; the streams lock
   * (held) keeps every stream asked about from being destroyed. */
  for (size_t i = 0; i < n; i++) {
    if (refs[i].met != MET_ASK)
      continue;
    CUstreamCaptureStatus st;
    uint64_t id = 0;
    bool same = driver_capture_state((CUstream)(uintptr_t)refs[i].stream, &st, &id) &&
                st != CU_STREAM_CAPTURE_STATUS_NONE && (!id || !refs[i].driver_id || id == refs[i].driver_id);
    if (same && !refs[i].driver_id)
      refs[i].learnt = id;
    /* still active: not broken, by this call or any; invalid: by this call
     * or a later one; over (an end since) or unknown: maybe by this call */
    refs[i].met = !same ? MET_MAYBE : st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? MET_NOT : MET_MAYBE_INVALID;
  }
  m = cg_captures_model_lock();
  for (size_t i = 0; m && i < n; i++) {
    cg_capture *c = cg_model_find(m, refs[i].stream);
    if (!c || c->id != refs[i].id)
      continue;
    /* Asked with its id unknown: the answer is its capture's only if no end
     * of it was on its way (the stream may capture another sequence by
     * then); so, it is learnt. */
    if (refs[i].learnt && cg_captures_end_tick(c))
      refs[i].met = MET_MAYBE;
    else if (refs[i].learnt && !c->driver_id)
      c->driver_id = refs[i].learnt;
    if (refs[i].met == MET_NOT)
      continue;
    if (refs[i].met == MET_SURELY) {
      mark(c, b, false);
      continue;
    }
    if (refs[i].met == MET_MAYBE_INVALID && !c->unwatched_break)
      c->status = CG_CAPTURE_INVALIDATED; /* the model follows the driver */
    if (!c->unwatched_break && !c->broken_by)
      offer(&c->maybe_by, b);
  }
  cg_captures_model_unlock();
  cg_streams_unlock();
  if (now_out)
    *now_out = now;
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
  if (joined)
    learn_driver_ids(key, joined);
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

bool cg_captures_lacks_offender(uint64_t key) {
  cg_model *m = cg_captures_model_lock();
  cg_capture *c = m ? cg_model_find(m, key) : NULL;
  bool lacks = c && !c->broken_by;
  cg_captures_model_unlock();
  return lacks;
}

void cg_captures_await_offender(uint64_t key) {
  uint64_t start = cg_monotonic_ns(), now_tick = cg_captures_tick(); /* the driver's end has returned */
  for (unsigned spins = 0;; spins++) {
    cg_model *m = cg_captures_model_lock();
    cg_capture *c = m ? cg_model_find(m, key) : NULL;
    /* Refusals that may have broken it first: made before its end, and
     * before its first offender as marked (which one made surely before
     * replaces); none to wait for behind an offender with no ticks. */
    uint64_t bound = now_tick;
    const cg_break *bb = c ? c->broken_by : NULL;
    if (bb) {
      uint64_t ub = bb->in_driver ? bb->in_driver : bb->tick1;
      bound = ub && ub < bound ? ub : ub ? bound : 0;
    }
    cg_captures_model_unlock();
    if (!c)
      return;
    bool pending = bound && pending_before(bound);
    bool in_driver = !bb && __atomic_load_n(&watched_in_flight, __ATOMIC_SEQ_CST);
    /* A refused call is marked soon: waited for longer than a call still
     * in the driver, which may be a synchronisation it let through. */
    if ((!pending && !in_driver) || cg_monotonic_ns() - start > (pending ? 1000000000ull : 20000000ull))
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
  if (!c->id || c->status != CG_CAPTURE_ACTIVE || cg_stream_key_per_thread(c->stream) || !still_active(c))
    return;
  CUstreamCaptureStatus st;
  uint64_t id;
  /* A watched call may be on its way (in the driver, or refused and not
   * marked yet), its fast path included: its break, not an unwatched one. */
  if (!driver_capture_state((CUstream)(uintptr_t)c->stream, &st, &id) ||
      st != CU_STREAM_CAPTURE_STATUS_INVALIDATED || __atomic_load_n(&watched_in_flight, __ATOMIC_SEQ_CST) ||
      __atomic_load_n(&refusals_pending, __ATOMIC_SEQ_CST) || cg_fence_busy(CG_FENCE_BREAKERS))
    return;
  cg_model *m = cg_captures_model_lock();
  cg_capture *open = m ? cg_model_find(m, c->stream) : NULL;
  if (open && open->id == c->id && open->status == CG_CAPTURE_ACTIVE && !open->broken_by && !open->maybe_by) {
    open->status = CG_CAPTURE_INVALIDATED; /* broken, by nothing capguard saw */
    open->unwatched_break = true;
  }
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
  if (!c->id || c->status != CG_CAPTURE_ACTIVE || cg_stream_key_per_thread(c->stream))
    return;
  cg_streams_ask_lock();
  cg_captures_check_driver_state_gated(c);
  cg_streams_unlock();
}
