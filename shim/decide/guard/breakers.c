#include "breakers.h"

#include <stdlib.h>

#include "config.h"
#include "forks.h"
#include "policy.h"
#include "query_fence.h"
#include "report.h"
#include "capguard/clock.h"
#include "warn.h"
#include "signals_held.h"

static cg_verdict deferred_verdict(cg_fix f) {
  return f == CG_FIX_DEFER_FREE ? CG_VERDICT_DEFERRED_FREE
         : f == CG_FIX_DEFER_UNLOAD ? CG_VERDICT_DEFERRED
                                    : CG_VERDICT_DEFERRED_DESTROY;
}

/* Deferral is decided and queued with the gate held: the captures the call
 * waits for cannot end in between (an end that came first would leave the
 * call queued until some later capture ends). True when queued. */
static bool try_defer(const cg_call *c, cg_hit *hit, bool *judged) {
  bool oom = false, queued = false;
  cg_gate_lock();
  cg_captures_judge_gated(c->rule, c->target, c->ptsz, hit);
  *judged = true;
  if (hit->cls == CG_HIT_PROHIBITED)
    queued = cg_policy_defer((void *)(uintptr_t)c->target, c->invoke_handle, &oom);
  cg_gate_unlock();
  if (oom)
    cg_policy_warn_no_room(); /* after the gate: stderr may block */
  return queued;
}

static bool is_refusal(CUresult r) { return cg_report_verdict_of(r) == CG_VERDICT_REFUSED; }

/* A refusal capguard did not foresee (its model, or the wrapper's look,
 * was a moment behind the driver: a capture began in between). Attributed
 * (cg_captures_attribute: the captures the call may have broken, once
 * every begin the driver may have made before it is in the model), then
 * reported, after the gate. Inside the watched region. */
static void report_unforeseen(const cg_call *c, CUresult r) {
  cg_captures_refusal_returned();
  cg_begin_site *here = cg_begin_site_take(NULL, NULL); /* before any lock: may take the loader's lock */
  cg_break b = cg_break_of(cg_ep_name(c->ep), c->kind, CG_VERDICT_REFUSED, r, here);
  cg_hit hit;
  cg_captures_attribute(NULL, c->rule, c->target, c->ptsz, &b, &hit);
  free(here);
  cg_event e = {.kind = c->kind, .call = cg_ep_name(c->ep), .capture = hit.first, .n_prohibitors = hit.n,
                .has_handle = c->has_target, .handle = c->target};
  cg_report_refusal_and_free(&e, NULL, &hit.site, r, "a refused call's report");
}

void cg_breaker_refused_unseen(cg_entry_point ep, cg_event_kind kind, cg_rule rule, CUresult r) {
  /* Counted in flight at once (the driver's log callback, where there is
   * one, counted the refusal already, inside the call): an end of the
   * capture this call broke waits for its attribution
   * (cg_captures_await_offender). */
  cg_captures_watched_enter_late();
  /* The fast path keeps no argument: a rule that needs the call's stream or
   * event is judged as the captures that prohibit the thread (what the
   * driver also breaks for it); a context synchronisation, as every capture
   * of the thread's context (it breaks captures of every mode). */
  cg_call c = {.ep = ep, .kind = kind, .rule = rule == CG_RULE_ANY ? CG_RULE_ANY : CG_RULE_PROHIBITED};
  report_unforeseen(&c, r);
  cg_captures_watched_leave();
}

/* A query answered not ready for longer than this is said, once per
 * process: a thread may be waiting for a capture that never ends. */
#define LONG_NOT_READY_NS (5ull * 1000000000ull)

/* The event this thread was last answered not ready for, and since when
 * (a poller asks for the same event over and over). */
static __thread uint64_t not_ready_event __attribute__((tls_model("initial-exec")));
static __thread uint64_t not_ready_since __attribute__((tls_model("initial-exec")));

static void say_long_not_ready(uint64_t event, const cg_capture *c) {
  static int said;
  uint64_t now = cg_monotonic_ns();
  if (not_ready_event != event || !not_ready_since) {
    not_ready_event = event;
    not_ready_since = now;
    return;
  }
  if (now - not_ready_since < LONG_NOT_READY_NS || __atomic_load_n(&said, __ATOMIC_RELAXED) ||
      __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
    return;
  cg_warn("cuEventQuery of event 0x%llx has been answered not ready for %llu s: it was recorded in capture %llu "
          "(stream 0x%llx, begun by thread %llu), which is still open; a thread waiting for the event waits for "
          "that capture to end (said once per process)",
          (unsigned long long)event, (unsigned long long)((now - not_ready_since) / 1000000000ull),
          (unsigned long long)c->id, (unsigned long long)c->stream, (unsigned long long)c->tid);
}

/* The call made by the driver, or answered by guard mode's fix; *v and
 * *driver_result say which. */
static CUresult decide(const cg_call *c, const cg_hit *hit, cg_verdict *v, int *driver_result) {
  bool guard = cg_cfg.mode == CG_RUN_GUARD;
  CUresult r;
  if (guard && c->fix == CG_FIX_NOT_READY && hit->cls == CG_HIT_EVENT && hit->first.tid != cg_self_tid()) {
    /* The driver would answer 907 and break the capture. The event is in a
     * graph that has not run: it is not ready, which is what a poller
     * expects to hear while work is outstanding. Never to the thread that
     * began the capture (the one that must end it): a poll there would
     * wait for its own end forever, so it gets the driver's 907. */
    *v = CG_VERDICT_NOT_READY;
    *driver_result = -1;
    say_long_not_ready(c->target, &hit->first);
    return CUDA_ERROR_NOT_READY;
  }
  /* The driver is called, and may break the capture: if something capguard
   * does not watch broke it first, the model must know before this call is
   * named its first offender. */
  cg_captures_check_driver_state(&hit->first);
  cg_captures_watched_enter(); /* left once its break is marked (cg_breaker_call) */
  if (guard && c->fix == CG_FIX_NOT_READY && hit->cls == CG_HIT_PROHIBITED) {
    /* An event that is not in a capture, queried from a thread a capture
     * prohibits (a global-mode watchdog between a capture's begin and the
     * event's record into it): the driver would answer 900 and break the
     * capture. Asked in relaxed mode, it answers the truth and breaks
     * nothing (driver-semantics.md, first matrix, "+swap" columns). A
     * record of the event into a capture cannot overtake the question
     * (query_fence.h). */
    r = cg_policy_call_relaxed(c->invoke, c->args);
    *v = r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY ? CG_VERDICT_RESCUED : cg_report_verdict_of(r);
    *driver_result = (int)r;
    return r;
  }
  if (guard && c->fix == CG_FIX_RESCUE && cg_cfg.rescue && hit->cls == CG_HIT_PROHIBITED) {
    r = cg_policy_call_relaxed(c->invoke, c->args);
    *v = r == CUDA_SUCCESS ? CG_VERDICT_RESCUED : cg_report_verdict_of(r);
  } else {
    r = c->invoke(c->args);
    *v = cg_report_verdict_of(r);
  }
  *driver_result = (int)r;
  return r;
}

/* A wait on an event recorded in a capture: a stream outside every capture
 * is forked into it (where, remembered for an end refused with 904); a
 * stream of the capture joins back the fork that recorded the event. */
static void note_fork_or_join(const cg_call *c, const cg_hit *hit) {
  if (hit->stream_captures)
    cg_fork_joined(hit->event_capture, c->aux);
  else
    cg_fork_add(hit->event_capture, cg_stream_key((CUstream)(uintptr_t)c->target, c->ptsz), cg_ep_name(c->ep),
                cg_begin_site_take(NULL, NULL));
}

/* The kind an event of this call is logged as: a captured copy from
 * pageable memory is its own kind, whatever row made it. */
static cg_event_kind kind_of(const cg_call *c, const cg_hit *hit) {
  return hit->cls == CG_HIT_PAGEABLE ? CG_EV_PAGEABLE_COPY : c->kind;
}

/* An unload (cuModuleUnload, cuLibraryUnload: fix CG_FIX_DEFER_UNLOAD)
 * made while something captures. Deferred like a free in guard mode, but
 * the driver's own call, when it is made, is made with the gate held: no
 * capture may begin between capguard's check and the driver's call (the
 * unload would break it, and the report would not say what the driver saw).
 * Every one is reported, with the module it unloads. */
static CUresult call_gated(const cg_call *c) {
  void *handle = (void *)(uintptr_t)c->target;
  cg_report_scratch *s = cg_report_room("an unload's report");
  cg_begin_site *here = s ? cg_begin_site_take(NULL, NULL) : NULL; /* before the gate, as for loads */
  cg_event e = {.kind = c->kind, .call = cg_ep_name(c->ep), .driver_result = -1, .module = c->target};
  cg_hit hit;
  cg_gate_lock();
  cg_captures_judge_gated(c->rule, c->target, c->ptsz, &hit);
  if (hit.cls != CG_HIT_NONE) /* the gate is held: no destroy of its stream can run */
    cg_captures_check_driver_state_gated(&hit.first);
  e.capture = hit.first;
  e.n_prohibitors = hit.n;
  if (hit.cls == CG_HIT_NONE || !s) {
    CUresult r = c->invoke_handle(handle);
    cg_gate_unlock();
    if (s && r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      cg_report_refusal_and_free(&e, s, NULL, r, NULL);
    else
      free(s);
    free(here);
    return r;
  }
  CUresult r;
  bool defer_oom = false;
  if (cg_policy_defer(handle, c->invoke_handle, &defer_oom)) {
    r = CUDA_SUCCESS;
    e.verdict = deferred_verdict(c->fix);
  } else {
    cg_captures_watched_enter(); /* a capture it breaks is its break, not an unwatched call's */
    r = c->invoke_handle(handle);
    e.driver_result = (int)r;
    e.verdict = cg_report_verdict_of(r);
    if (e.verdict == CG_VERDICT_REFUSED) { /* the driver invalidated them: so does the model */
      cg_captures_refusal_returned();
      cg_break b = cg_break_of(e.call, e.kind, e.verdict, r, here);
      cg_captures_break(&hit, &b, false);
      e.capture.status = CG_CAPTURE_INVALIDATED;
    }
    cg_captures_watched_leave();
  }
  cg_gate_unlock();
  if (defer_oom)
    cg_policy_warn_no_room(); /* after the gate: stderr may block */
  e.result = (int)r;
  cg_report_and_free(&e, s, &hit.site, NULL);
  free(here);
  return r;
}

CUresult cg_breaker_call(const cg_call *c) {
  if (c->fix == CG_FIX_DEFER_UNLOAD)
    return call_gated(c);
  cg_hit hit;
  bool judged = false;
  cg_verdict v;
  int driver_result = -1;
  CUresult r;
  bool deferrable = cg_cfg.mode == CG_RUN_GUARD && c->invoke_handle &&
                    (c->fix == CG_FIX_DEFER_FREE || c->fix == CG_FIX_DEFER_DESTROY);
  if (deferrable && try_defer(c, &hit, &judged)) {
    r = CUDA_SUCCESS;
    v = deferred_verdict(c->fix);
  } else {
    /* An event query is in flight from its judgement until the driver has
     * answered: a record of the event into a capture waits for it
     * (query_fence.h). */
    bool fenced = c->fix == CG_FIX_NOT_READY;
    unsigned *q = fenced ? cg_query_enter() : NULL;
    if (!judged)
      cg_captures_judge_aux(c->rule, c->target, c->ptsz, c->aux, &hit);
    if (hit.cls == CG_HIT_NONE) { /* no capture forbids it: the driver's business */
      cg_captures_watched_enter();
      /* A query judged with a capture's begin still on its way into the
       * model may meet that capture in the driver: asked in relaxed mode,
       * where no capture prohibits it (an event in a capture is marked
       * before its record, so this one is in none). */
      r = fenced && cg_cfg.mode == CG_RUN_GUARD ? cg_policy_call_relaxed(c->invoke, c->args) : c->invoke(c->args);
      if (fenced)
        cg_query_leave(q);
      if (c->rule == CG_RULE_WAIT_EVENT && hit.event_capture && r == CUDA_SUCCESS)
        note_fork_or_join(c, &hit);
      if (__builtin_expect(is_refusal(r), 0))
        report_unforeseen(c, r);
      cg_captures_watched_leave();
      return r;
    }
    r = decide(c, &hit, &v, &driver_result);
    if (fenced)
      cg_query_leave(q);
    if (driver_result >= 0 && is_refusal(r))
      cg_captures_refusal_returned(); /* an end it broke waits for its mark */
    /* Third-matrix rules: what the driver let through is news only when it
     * escaped the calling thread's own capture (run now, not in replay). */
    if (v == CG_VERDICT_ALLOWED && c->rule >= CG_RULE_LEGACY && (hit.cls == CG_HIT_ESCAPE || hit.cls == CG_HIT_PAGEABLE))
      v = CG_VERDICT_ESCAPED;
    if (v == CG_VERDICT_ALLOWED) {
      cg_captures_watched_leave();
      /* The driver saw no capture forbid it (the one judged ended
       * meanwhile; a wait on an event never recorded; legacy-stream work
       * the driver took after all): no event. */
      return r;
    }
  }

  /* Where the call was made: the first offender's line if it broke the
   * capture, and what tells a repeat from a new call. Taken with no lock
   * held (a backtrace may take the loader's lock). From here to the report,
   * the host's signals are held off (signals_held.h): the backtrace, malloc
   * and dladdr are not for a handler to interrupt. */
  cg_signals held;
  cg_signals_hold(&held);
  cg_begin_site *here = cg_begin_site_take(NULL, NULL);
  if (cg_word_is(&cg_verdicts, v, CG_WORD_BREAKS)) {
    cg_break b = cg_break_of(cg_ep_name(c->ep), kind_of(c, &hit), v, r, here);
    /* A refusal is marked where the driver made it: in the captures judged
     * and those the rule names now (a capture begun after the judgement
     * may be the one refused), each by when its begin and end met the call. */
    if (v == CG_VERDICT_REFUSED && driver_result >= 0)
      cg_captures_attribute(&hit, c->rule, c->target, c->ptsz, &b, NULL);
    else
      cg_captures_break(&hit, &b, false);
    hit.first.status = CG_CAPTURE_INVALIDATED;
  }
  if (driver_result >= 0)
    cg_captures_watched_leave();
  if (!cg_report_first_sighting(cg_ep_name(c->ep), kind_of(c, &hit), v, hit.first.id, here)) {
    cg_captures_count_repeat(&hit);
    free(here);
    cg_signals_release(&held);
    return r;
  }
  free(here);
  cg_event e = {.kind = kind_of(c, &hit), .call = cg_ep_name(c->ep), .verdict = v, .result = (int)r,
                .driver_result = driver_result, .capture = hit.first, .n_prohibitors = hit.n,
                .has_handle = c->has_target, .handle = c->target};
  cg_report_and_free(&e, NULL, &hit.site, "a call's report");
  cg_signals_release(&held);
  return r;
}

