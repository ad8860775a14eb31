#include "guard.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capguard/file_read.h"
#include "capguard/image.h"
#include "config.h"
#include "driver.h"
#include "output.h"
#include "warn.h"
#include "policy.h"
#include "priming.h"
#include "stack.h"

static uint64_t counters_events[CG_EV_KIND_COUNT];
static uint64_t counters_verdicts[CG_VERDICT_COUNT];

void *cg_capture_begin_enter(void) {
  cg_priming_before_begin();
  /* The begin site is taken before the gate: the first backtrace may take
   * the loader's lock, and a thread inside dlopen may be waiting for the gate. */
  cg_begin_site *site = cg_begin_site_take();
  cg_captures_begin_enter();
  return site;
}

void cg_capture_begin_leave(void *site, CUresult r, uint64_t key, cg_capture_mode mode, bool into_graph) {
  cg_captures_begin_leave(site, r, key, mode, into_graph);
}

void cg_capture_end_enter(void) { cg_captures_end_enter(); }

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
  char where[512];
  cg_begin_site_text(site, where, sizeof where);
  cg_capture_record rec = {.capture = &closed, .pid = (uint64_t)getpid(), .began = where, .ended = true,
                           .end_result = (int)r};
  cg_output_capture(&rec);
  free(site);
  cg_policy_run_deferred();
  return r;
}

static void invalidate_prohibitors(cg_capture *first) {
  cg_captures_invalidate_prohibitors();
  first->status = CG_CAPTURE_INVALIDATED;
}

/* Stack buffers for one event; on the heap because the calling thread may
 * have a small stack and events are rare. */
typedef struct {
  const char *native[CG_MAX_NATIVE_FRAMES];
  char native_buf[8192];
  cg_py_frame py[CG_MAX_PY_FRAMES];
  char py_buf[8192];
  char began[512];
  cg_begin_site site;
  cg_image_info image;
} event_scratch;

static void report(cg_event *e, event_scratch *s) {
  e->pid = (uint64_t)getpid();
  e->tid = cg_self_tid();
  e->time_ns = cg_now_ns();
  e->thread_mode = cg_self_mode();
  e->driver_version = cg_driver_version();
  e->emulated_version = cg_cfg.emulate_driver;
  cg_begin_site_text(&s->site, s->began, sizeof s->began); /* dladdr: never under model_lock or the gate */
  e->capture_began = s->began;
  size_t n = cg_native_stack(0, s->native, CG_MAX_NATIVE_FRAMES, s->native_buf, sizeof s->native_buf);
  /* Start at the caller of the driver entry point: capguard's own frames
   * (inlined or not) say nothing to the person reading the report. */
  size_t first = 0;
  while (first < n && strncmp(s->native[first], "libcapguard", 11) == 0)
    first++;
  e->native = s->native + first;
  e->n_native = n - first;
  e->n_py = cg_python_stack(s->py, CG_MAX_PY_FRAMES, s->py_buf, sizeof s->py_buf);
  e->py = s->py;
  __atomic_add_fetch(&counters_events[e->kind], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&counters_verdicts[e->verdict], 1, __ATOMIC_RELAXED);
  cg_output_event(e);
}

static cg_verdict verdict_of(CUresult r) {
  if (r == CUDA_SUCCESS)
    return CG_VERDICT_ALLOWED;
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    return CG_VERDICT_REFUSED;
  return CG_VERDICT_FAILED;
}

/* A load or unload the driver refused although capguard saw no capture
 * prohibiting the thread (a capture begun where capguard could not see it):
 * reported all the same, so that no refusal goes unsaid. */
static void report_unexplained_refusal(cg_event *e, event_scratch *s, CUresult r) {
  e->driver_result = (int)r;
  e->result = (int)r;
  e->verdict = CG_VERDICT_REFUSED;
  report(e, s);
}

/* Makes the driver's load and releases the gate (held on entry), after the
 * driver has answered: no capture may begin or end between capguard's check
 * and the driver's, so the report says what the driver saw. One exception:
 * a load from a file on a driver that never refuses loads mid-capture (12.3
 * and later) is made after the gate is released, since the driver's reading
 * of a file can block indefinitely (a FIFO, a hung network file system), and
 * other threads' captures must not wait for it; its verdict cannot change. */
static CUresult load_and_ungate(const cg_load *l, cg_capture *first) {
  if (l->path && !cg_driver_rules_loads()) {
    cg_gate_unlock();
    return l->invoke(l);
  }
  CUresult r = l->invoke(l);
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) /* the driver invalidated them: so does the model */
    invalidate_prohibitors(first);
  cg_gate_unlock();
  return r;
}

/* A load or unload that went straight to the driver (nothing captured when
 * its wrapper looked) and was refused: a capture began on another thread in
 * between. The wrapper's fast path stays one atomic load; the rare refusal
 * is reported after the fact, naming the capture that now prohibits the
 * thread. */
void cg_guard_refused_unseen(cg_entry_point ep, bool unload) {
  event_scratch *s = calloc(1, sizeof *s);
  if (!s) {
    cg_warn_oom("a refused call's report");
    return;
  }
  cg_event e = {.kind = unload ? CG_EV_MODULE_UNLOAD : CG_EV_MODULE_LOAD, .call = cg_ep_name[ep]};
  cg_begin_site site;
  /* Only named, not marked invalid: the capture the driver saw may have
   * ended since, and marking a newer one would make capguard fail a capture
   * the driver kept (the driver's own end reports the one it broke). */
  cg_gate_lock();
  e.n_prohibitors = cg_captures_prohibitor(&e.capture, &site);
  cg_gate_unlock();
  s->site = site;
  report_unexplained_refusal(&e, s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  free(s);
}

CUresult cg_guard_load(const cg_load *l) {
  /* Cheap check first: loads while another thread's capture does not
   * prohibit this one need no inspection. */
  cg_gate_lock();
  if (!cg_captures_prohibitor_count()) {
    cg_capture none;
    CUresult r = load_and_ungate(l, &none);
    if (r != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      return r;
    event_scratch *s = calloc(1, sizeof *s);
    if (s) {
      cg_event e = {.kind = CG_EV_MODULE_LOAD, .call = cg_ep_name[l->ep]};
      report_unexplained_refusal(&e, s, r);
      free(s);
    } else {
      cg_warn_oom("a refused load's report");
    }
    return r;
  }
  cg_gate_unlock();

  /* Without room for the event, the load goes to the driver as it would
   * without capguard. */
  event_scratch *s = calloc(1, sizeof *s);
  if (!s)
    cg_warn_oom("a load's report");
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
  if (!e.n_prohibitors || !s) {
    CUresult r = load_and_ungate(l, &e.capture);
    if (s && r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      report_unexplained_refusal(&e, s, r);
    free(file);
    free(s);
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
      invalidate_prohibitors(&e.capture);
    cg_gate_unlock();
  } else {
    r = load_and_ungate(l, &e.capture);
    e.driver_result = (int)r;
    e.verdict = verdict_of(r);
  }
  e.result = (int)r;

  if (r == CUDA_SUCCESS && l->out && *l->out)
    e.module = (uint64_t)(uintptr_t)*l->out;
  /* Every load that was not served is recorded, with how many loads of
   * these bytes this process made during capture, except one the driver
   * failed for its own reasons (a bad image would only fail again). */
  if (e.image && e.image->kind != CG_IMAGE_UNKNOWN && e.verdict != CG_VERDICT_SERVED &&
      e.verdict != CG_VERDICT_FAILED)
    cg_priming_record(e.image, l->is_library);
  s->site = site;
  report(&e, s);
  free(file);
  free(s);
  return r;
}

CUresult cg_guard_unload(const cg_unload *u) {
  event_scratch *s = calloc(1, sizeof *s);
  if (!s)
    cg_warn_oom("an unload's report");
  cg_event e = {.kind = CG_EV_MODULE_UNLOAD, .call = cg_ep_name[u->ep], .driver_result = -1,
                .module = (uint64_t)(uintptr_t)u->handle};
  cg_begin_site site;
  cg_gate_lock();
  e.n_prohibitors = cg_captures_prohibitor(&e.capture, &site);
  if (!e.n_prohibitors || !s) {
    CUresult r = u->invoke(u->handle);
    cg_gate_unlock();
    if (s && r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      report_unexplained_refusal(&e, s, r);
    free(s);
    return r;
  }
  CUresult r;
  bool defer_oom = false;
  if (cg_policy_defer_unload(u, &defer_oom)) {
    r = CUDA_SUCCESS;
    e.verdict = CG_VERDICT_DEFERRED;
  } else {
    r = u->invoke(u->handle);
    e.driver_result = (int)r;
    e.verdict = verdict_of(r);
    if (e.verdict == CG_VERDICT_REFUSED)
      invalidate_prohibitors(&e.capture);
  }
  cg_gate_unlock();
  if (defer_oom)
    cg_warn_oom("queueing a deferred unload, or 4096 were queued already"); /* after the gate: stderr may block */
  e.result = (int)r;
  s->site = site;
  report(&e, s);
  free(s);
  return r;
}

/* Fork: the child is a process of its own, with nothing counted yet. */
void cg_guard_atfork_child(void) {
  memset(counters_events, 0, sizeof counters_events);
  memset(counters_verdicts, 0, sizeof counters_verdicts);
}

void cg_guard_exit(void) {
  cg_summary sum = {.pid = (uint64_t)getpid()};
  sum.captures_begun = cg_captures_begun_total();
  sum.captures_broken = cg_captures_broken();
  memcpy(sum.events, counters_events, sizeof sum.events);
  memcpy(sum.verdicts, counters_verdicts, sizeof sum.verdicts);
  cg_priming_summary(&sum);
  cg_policy_at_exit(&sum);
  cg_output_summary(&sum);
}
