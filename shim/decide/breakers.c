#include "breakers.h"

#include <stdlib.h>

#include "config.h"
#include "forks.h"
#include "policy.h"
#include "report.h"

static cg_verdict deferred_verdict(cg_fix f) {
  return f == CG_FIX_DEFER_FREE ? CG_VERDICT_DEFERRED_FREE : CG_VERDICT_DEFERRED_DESTROY;
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

/* A refusal capguard did not foresee: named with the capture that now
 * prohibits the call, not marked (the capture the driver saw may have
 * ended since, and the driver's own end reports the one it broke). */
static void report_unforeseen(const cg_call *c, CUresult r) {
  cg_hit hit;
  cg_captures_judge_aux(c->rule, c->target, c->ptsz, c->aux, &hit);
  cg_event e = {.kind = c->kind, .call = cg_ep_name[c->ep], .capture = hit.first, .n_prohibitors = hit.n,
                .has_handle = c->has_target, .handle = c->target};
  cg_report_refusal_and_free(&e, NULL, &hit.site, r, "a refused call's report");
}

void cg_breaker_refused_unseen(cg_entry_point ep, cg_event_kind kind, CUresult r) {
  cg_call c = {.ep = ep, .kind = kind, .rule = CG_RULE_PROHIBITED};
  report_unforeseen(&c, r);
}

/* The call made by the driver, or answered by guard mode's fix; *v and
 * *driver_result say which. */
static CUresult decide(const cg_call *c, const cg_hit *hit, cg_verdict *v, int *driver_result) {
  bool guard = cg_cfg.mode == CG_RUN_GUARD;
  CUresult r;
  if (guard && c->fix == CG_FIX_NOT_READY && hit->cls == CG_HIT_EVENT) {
    /* The driver would answer 907 and break the capture. The event is in a
     * graph that has not run: it is not ready, which is what a poller
     * expects to hear while work is outstanding. */
    *v = CG_VERDICT_NOT_READY;
    *driver_result = -1;
    return CUDA_ERROR_NOT_READY;
  }
  /* The driver is called, and may break the capture: if something capguard
   * does not watch broke it first, the model must know before this call is
   * named its first offender. */
  cg_captures_check_driver_state(&hit->first);
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
    cg_fork_add(hit->event_capture, cg_stream_key((CUstream)(uintptr_t)c->target, c->ptsz), cg_ep_name[c->ep],
                cg_begin_site_take());
}

CUresult cg_breaker_call(const cg_call *c) {
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
    if (!judged)
      cg_captures_judge_aux(c->rule, c->target, c->ptsz, c->aux, &hit);
    if (hit.cls == CG_HIT_NONE) { /* no capture forbids it: the driver's business */
      r = c->invoke(c->args);
      if (c->rule == CG_RULE_WAIT_EVENT && hit.event_capture && r == CUDA_SUCCESS)
        note_fork_or_join(c, &hit);
      if (__builtin_expect(is_refusal(r), 0))
        report_unforeseen(c, r);
      return r;
    }
    r = decide(c, &hit, &v, &driver_result);
    /* Third-matrix rules: what the driver let through is news only when it
     * escaped the calling thread's own capture (run now, not in replay); a
     * wait on an event never recorded, or legacy-stream work the driver
     * took after all, is nothing to report. */
    if (v == CG_VERDICT_ALLOWED && c->rule >= CG_RULE_LEGACY) {
      if (hit.cls != CG_HIT_ESCAPE && hit.cls != CG_HIT_PAGEABLE)
        return r;
      v = CG_VERDICT_ESCAPED;
    }
  }

  /* Where the call was made: the first offender's line if it broke the
   * capture, and what tells a repeat from a new call. Taken with no lock
   * held (a backtrace may take the loader's lock). */
  cg_begin_site *here = cg_begin_site_take();
  if (cg_word_is(&cg_verdicts, v, CG_WORD_BREAKS)) {
    cg_break b = cg_break_of(cg_ep_name[c->ep], hit.cls == CG_HIT_PAGEABLE ? CG_EV_PAGEABLE_COPY : c->kind, v, r, here);
    cg_captures_break(&hit, &b, false);
    hit.first.status = CG_CAPTURE_INVALIDATED;
  }
  if (!cg_report_first_sighting(cg_ep_name[c->ep], hit.cls == CG_HIT_PAGEABLE ? CG_EV_PAGEABLE_COPY : c->kind, v,
                                hit.first.id, here)) {
    cg_captures_count_repeat(&hit);
    free(here);
    return r;
  }
  free(here);
  cg_event_kind kind = hit.cls == CG_HIT_PAGEABLE ? CG_EV_PAGEABLE_COPY : c->kind;
  cg_event e = {.kind = kind, .call = cg_ep_name[c->ep], .verdict = v, .result = (int)r,
                .driver_result = driver_result, .capture = hit.first, .n_prohibitors = hit.n,
                .has_handle = c->has_target, .handle = c->target};
  cg_report_and_free(&e, NULL, &hit.site, "a call's report");
  return r;
}
