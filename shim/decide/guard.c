#include "guard.h"
#include "forks.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capguard/file_read.h"
#include "capguard/image.h"
#include "captures_exit.h"
#include "config.h"
#include "driver.h"
#include "output.h"
#include "policy.h"
#include "priming.h"
#include "report.h"
#include "stack.h"

void *cg_capture_begin_enter(void) {
  cg_priming_before_begin();
  /* The begin site is taken before the gate: the first backtrace may take
   * the loader's lock, and a thread inside dlopen may be waiting for the gate. */
  cg_begin_site *site = cg_begin_site_take();
  cg_captures_begin_enter();
  return site;
}

void cg_capture_begin_leave(void *site, CUresult r, CUstream s, bool ptsz, cg_capture_mode mode,
                            bool into_graph) {
  /* The driver's id lets a stream that joins the capture be told apart
   * (model/break_rules.c); asked under the gate held shared, which no driver
   * call of capguard's waits for. */
  uint64_t driver_id = r == CUDA_SUCCESS ? cg_captures_driver_id(s, ptsz) : 0;
  cg_captures_begin_leave(site, r, cg_stream_key(s, ptsz), driver_id, mode, into_graph);
}

void cg_capture_end_enter(void) { cg_captures_end_enter(); }

/* "app.py:40 in step" and "app.py:40 in step (libfoo.so(f+0x1))" for the
 * capture record's first offender. dladdr: outside every capguard lock. */
static void offender_text(const cg_break *b, cg_offender *o, char *where, size_t cap) {
  cg_begin_site_text(&b->site, where, cap);
  *o = b->who;
  o->python = b->site.python;
  o->where = where;
}

CUresult cg_capture_end_leave(uint64_t key, CUresult r, CUgraph *graph) {
  cg_capture closed;
  bool emulated_break = false;
  if (!cg_captures_end_leave(key, &r, &closed, &emulated_break))
    return r;
  if (emulated_break && graph && *graph) {
    if (cg_drv.GraphDestroy)
      cg_drv.GraphDestroy(*graph);
    *graph = NULL;
  }
  cg_begin_site *site = closed.user;
  cg_break *broke = closed.broken_by;
  /* An end refused with 904 or 908 names its own cause (forks.c). */
  cg_break *end_cause = cg_end_offender(closed.id, r);
  if (!broke)
    broke = end_cause;
  else
    free(end_cause);
  char began[512], where[512];
  cg_begin_site_text(site, began, sizeof began);
  cg_offender off;
  cg_capture_record rec = {.capture = &closed, .pid = (uint64_t)getpid(), .began = began, .ended = true,
                           .end_result = (int)r};
  if (broke) {
    offender_text(broke, &off, where, sizeof where);
    rec.broken_by = &off;
  }
  rec.repeats = closed.repeats;
  cg_output_capture(&rec);
  free(site);
  free(broke);
  cg_policy_run_deferred();
  cg_priming_refresh_served(false);
  return r;
}

/* The driver refused the call (or capguard did, emulating): the captures
 * that prohibited it are broken, this call their first offender. */
static void break_prohibitors(cg_event *e, cg_verdict v, CUresult r, const cg_begin_site *where) {
  cg_hit hit = {.cls = CG_HIT_PROHIBITED, .first = e->capture};
  cg_break b = cg_break_of(e->call, e->kind, v, r, where);
  cg_captures_break(&hit, &b, v == CG_VERDICT_EMULATED);
  e->capture.status = CG_CAPTURE_INVALIDATED;
}

/* Makes the driver's load and releases the gate (held on entry), after the
 * driver has answered: no capture may begin or end between capguard's check
 * and the driver's, so the report says what the driver saw. One exception:
 * a load from a file on a driver that never refuses loads mid-capture (12.3
 * and later) is made after the gate is released, since the driver's reading
 * of a file can block indefinitely (a FIFO, a hung network file system), and
 * other threads' captures must not wait for it; its verdict cannot change. */
static CUresult load_and_ungate(const cg_load *l, cg_event *e, const cg_begin_site *where) {
  if (l->path && !cg_driver_rules_loads()) {
    cg_gate_unlock();
    return l->invoke(l);
  }
  CUresult r = l->invoke(l);
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && e->n_prohibitors) /* the driver invalidated them: so does the model */
    break_prohibitors(e, CG_VERDICT_REFUSED, r, where);
  cg_gate_unlock();
  return r;
}

/* A load or unload that went straight to the driver (nothing captured when
 * its wrapper looked) and was refused: a capture began on another thread in
 * between. The wrapper's fast path stays one atomic load; the rare refusal
 * is reported after the fact, naming the capture that now prohibits the
 * thread. */
void cg_guard_refused_unseen(cg_entry_point ep, bool unload) {
  cg_event e = {.kind = unload ? CG_EV_MODULE_UNLOAD : CG_EV_MODULE_LOAD, .call = cg_ep_name[ep]};
  cg_begin_site site;
  /* Only named, not marked invalid: the capture the driver saw may have
   * ended since, and marking a newer one would make capguard fail a capture
   * the driver kept (the driver's own end reports the one it broke). */
  cg_gate_lock();
  e.n_prohibitors = cg_captures_prohibitor(&e.capture, &site);
  cg_gate_unlock();
  cg_report_refusal_and_free(&e, NULL, &site, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "a refused call's report");
}

CUresult cg_guard_load(const cg_load *l) {
  /* Cheap check first: loads while another thread's capture does not
   * prohibit this one need no inspection. */
  cg_gate_lock();
  if (!cg_captures_prohibitor_count()) {
    cg_event none = {.kind = CG_EV_MODULE_LOAD, .call = cg_ep_name[l->ep]};
    CUresult r = load_and_ungate(l, &none, NULL);
    if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      cg_report_refusal_and_free(&none, NULL, NULL, r, "a refused load's report");
    return r;
  }
  cg_gate_unlock();

  /* Without room for the event, the load goes to the driver as it would
   * without capguard. Where the call was made is taken now, before the
   * gate (a backtrace may take the loader's lock): it names the call if it
   * breaks the capture. */
  cg_report_scratch *s = cg_report_room("a load's report");
  cg_begin_site *here = s ? cg_begin_site_take() : NULL;
  size_t file_size = 0;
  void *file = s && l->path ? cg_read_file(l->path, CG_IMAGE_MAX_BYTES, &file_size) : NULL;
  const void *img = file ? file : l->image;
  bool malformed = false;
  if (s && img) {
    /* An in-memory image has no length: inspected with CG_IMAGE_MAX_BYTES,
     * so that every byte is probed readable before it is read. */
    malformed = cg_image_inspect(img, file ? file_size : CG_IMAGE_MAX_BYTES, &s->image) != 0;
  }

  /* Inspection happened outside the gate; now decide and call under it. */
  cg_gate_lock();
  cg_event e = {.kind = CG_EV_MODULE_LOAD, .call = cg_ep_name[l->ep], .driver_result = -1};
  cg_begin_site site;
  e.n_prohibitors = cg_captures_prohibitor(&e.capture, &site);
  if (e.n_prohibitors)
    cg_captures_check_driver_state(&e.capture);
  if (!e.n_prohibitors || !s) {
    CUresult r = load_and_ungate(l, &e, here);
    if (s && r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      cg_report_refusal_and_free(&e, s, NULL, r, NULL);
    else
      free(s);
    free(here);
    free(file);
    return r;
  }
  if (img)
    e.image = &s->image;

  CUresult r;
  cg_verdict v;
  /* A malformed image is the driver's business: it gets the driver's own
   * answer, in every mode, and nothing of capguard's policy. */
  if (!malformed && cg_policy_load(l, e.image, &r, &v)) {
    e.verdict = v;
    if (v == CG_VERDICT_RESCUED || v == CG_VERDICT_FAILED)
      e.driver_result = (int)r;
    if (v == CG_VERDICT_EMULATED)
      break_prohibitors(&e, v, r, here);
    cg_gate_unlock();
  } else {
    r = load_and_ungate(l, &e, here);
    e.driver_result = (int)r;
    e.verdict = cg_report_verdict_of(r);
  }
  e.result = (int)r;

  if (r == CUDA_SUCCESS && l->out && *l->out)
    e.module = (uint64_t)(uintptr_t)*l->out;
  if (r == CUDA_SUCCESS && e.module && e.image && e.verdict != CG_VERDICT_SERVED)
    cg_priming_loaded(*l->out, e.image, l->is_library);
  cg_priming_record(e.image, l->is_library, e.verdict);
  cg_report_and_free(&e, s, &site, NULL);
  free(here);
  free(file);
  return r;
}

CUresult cg_guard_unload(const cg_unload *u) {
  cg_report_scratch *s = cg_report_room("an unload's report");
  cg_begin_site *here = s ? cg_begin_site_take() : NULL; /* before the gate, as for loads */
  cg_event e = {.kind = CG_EV_MODULE_UNLOAD, .call = cg_ep_name[u->ep], .driver_result = -1,
                .module = (uint64_t)(uintptr_t)u->handle};
  cg_begin_site site;
  cg_gate_lock();
  e.n_prohibitors = cg_captures_prohibitor(&e.capture, &site);
  if (e.n_prohibitors)
    cg_captures_check_driver_state(&e.capture);
  if (!e.n_prohibitors || !s) {
    CUresult r = u->invoke(u->handle);
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
  if (cg_policy_defer(u->handle, u->invoke, &defer_oom)) {
    r = CUDA_SUCCESS;
    e.verdict = CG_VERDICT_DEFERRED;
  } else {
    r = u->invoke(u->handle);
    e.driver_result = (int)r;
    e.verdict = cg_report_verdict_of(r);
    if (e.verdict == CG_VERDICT_REFUSED)
      break_prohibitors(&e, e.verdict, r, here);
  }
  cg_gate_unlock();
  if (defer_oom)
    cg_policy_warn_no_room(); /* after the gate: stderr may block */
  e.result = (int)r;
  cg_report_and_free(&e, s, &site, NULL);
  free(here);
  return r;
}

/* Fork: the child is a process of its own, with nothing counted yet. */
void cg_guard_atfork_child(void) { cg_report_atfork_child(); }

void cg_guard_exit(void) {
  cg_summary sum = {.pid = (uint64_t)getpid()};
  sum.captures_begun = cg_captures_begun_total();
  sum.captures_broken = cg_captures_broken();
  /* Captures still open get their records before the summary counts them. */
  sum.captures_open = cg_captures_write_open_at_exit();
  cg_report_counts(sum.events, sum.verdicts);
  cg_priming_refresh_served(true);
  cg_priming_summary(&sum);
  cg_policy_at_exit();
  cg_output_summary(&sum);
}
