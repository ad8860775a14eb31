/* Which captures a call breaks, and marking them broken with their first
 * offender: the rules of the calls that break captures on every driver
 * (live_captures.h, cg_rule), and the events recorded into captures that the
 * 907 rule needs. Part of the capture bookkeeping (live_captures.c holds the
 * model and its lock). */
#include <stdlib.h>
#include <string.h>

#include "live_captures.h"
#include "model_lock.h"
#include "capguard/clock.h"
#include "driver.h"
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

static void judge(cg_rule rule, uint64_t target, bool ptsz, uint64_t joined_id, cg_hit *hit) {
  memset(hit, 0, sizeof *hit);
  uint64_t tid = cg_self_tid();
  cg_capture_mode mode = cg_self_mode();
  cg_model *m = cg_captures_model_lock();
  if (!m) {
    cg_captures_model_unlock();
    return;
  }
  cg_capture *c = NULL;
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

void cg_captures_judge(cg_rule rule, uint64_t target, bool ptsz, cg_hit *hit) {
  /* Asked before the model's lock: the driver is never called with it held. */
  uint64_t joined = rule == CG_RULE_STREAM ? cg_captures_driver_id((CUstream)(uintptr_t)target, ptsz) : 0;
  judge(rule, rule == CG_RULE_ANY ? context_of(target) : target, ptsz, joined, hit);
}

void cg_captures_judge_gated(cg_rule rule, uint64_t target, bool ptsz, cg_hit *hit) {
  judge(rule, rule == CG_RULE_ANY ? context_of(target) : target, ptsz, 0, hit);
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
    if (hit->cls == CG_HIT_STREAM || hit->cls == CG_HIT_EVENT) {
      cg_capture *c = cg_model_find(m, hit->first.stream);
      if (c && c->id == hit->first.id)
        mark(c, b, emulated);
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

void cg_captures_count_repeat(const cg_hit *hit) {
  cg_model *m = cg_captures_model_lock();
  cg_capture *c = m ? cg_model_find(m, hit->first.stream) : NULL;
  if (c && c->id == hit->first.id)
    c->repeats++;
  cg_captures_model_unlock();
}

void cg_captures_event_recorded(uint64_t event, CUstream s, bool ptsz) {
  uint64_t key = cg_stream_key(s, ptsz);
  cg_model *m = cg_captures_model_lock();
  cg_capture *c = m ? cg_model_find(m, key) : NULL;
  if (c || !m) {
    cg_model_event_recorded(m, event, c);
    cg_captures_model_unlock();
    return;
  }
  cg_captures_model_unlock();
  /* Not where a capture began: it may have joined one (a side stream that
   * waited on an event of the capture). Only the driver knows. */
  uint64_t joined = cg_captures_driver_id(s, ptsz);
  m = cg_captures_model_lock();
  cg_model_event_recorded(m, event, joined ? cg_model_find_driver_id(m, joined) : NULL);
  cg_captures_model_unlock();
}

void cg_captures_check_driver_state(const cg_capture *c) {
  /* Nothing to learn of a capture the model holds broken already, or of a
   * per-thread default stream (a key with its two low bits set), which
   * only its own thread can name to the driver. */
  if (!c->id || c->status != CG_CAPTURE_ACTIVE || (c->stream & 3) == 3)
    return;
  CUstreamCaptureStatus st;
  uint64_t id;
  if (!driver_capture_state((CUstream)(uintptr_t)c->stream, &st, &id) ||
      st != CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    return;
  cg_model *m = cg_captures_model_lock();
  cg_capture *open = m ? cg_model_find(m, c->stream) : NULL;
  if (open && open->id == c->id && open->status == CG_CAPTURE_ACTIVE)
    open->status = CG_CAPTURE_INVALIDATED; /* broken, by nothing capguard saw */
  cg_captures_model_unlock();
}
