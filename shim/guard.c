#include "guard.h"

#include <execinfo.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capguard/file_read.h"
#include "capguard/image.h"
#include "config.h"
#include "driver.h"
#include "output.h"
#include "policy.h"
#include "priming.h"
#include "stack.h"

unsigned cg_open_captures;
unsigned cg_begins_in_flight;

/* The capture gate. Capture begins and ends hold it shared from before the
 * driver's call until the model has the result; every call whose outcome
 * depends on which captures are open (a load or unload while something
 * captures, a deferred unload, a priming preload) holds it exclusive from the
 * check until the driver has answered. So whenever capguard decides, the
 * model is what the driver sees: no capture can be begun (or ended) in the
 * driver and not yet (or no longer) in the model, and none can be begun
 * between capguard's check and the driver's call. Writer-preferring, so that
 * a stream of begins cannot starve a decision; nothing takes it twice on one
 * thread. Never held across a report, a log write or the loader's lock. */
static pthread_rwlock_t gate = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

void cg_gate_lock(void) { pthread_rwlock_wrlock(&gate); }
void cg_gate_unlock(void) { pthread_rwlock_unlock(&gate); }

static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_model *model;
static uint64_t counters_events[CG_EV_KIND_COUNT];
static uint64_t counters_verdicts[CG_VERDICT_COUNT];
static uint64_t captures_broken;

/* initial-exec: a preloaded library's TLS is static; no allocation on first use. */
static __thread uint64_t self_tid __attribute__((tls_model("initial-exec")));
static __thread int self_mode __attribute__((tls_model("initial-exec"))); /* 0 == CG_MODE_GLOBAL */

uint64_t cg_self_tid(void) {
  if (!self_tid)
    self_tid = (uint64_t)gettid();
  return self_tid;
}
cg_capture_mode cg_self_mode(void) { return (cg_capture_mode)self_mode; }
void cg_set_self_mode(cg_capture_mode mode) { self_mode = (int)mode; }

uint64_t cg_stream_key(CUstream s, bool ptsz) {
  if (s == CU_STREAM_PER_THREAD || (ptsz && s == NULL))
    return (cg_self_tid() << 2) | 3; /* no stream handle has its two low bits set */
  return (uint64_t)(uintptr_t)s;
}

/* Where a capture began: the raw return addresses, symbolized only if
 * someone asks (an event or the capture's log record), so a begin costs a
 * short unwind and no formatting. */
#define BEGIN_SITE_FRAMES 6 /* enough to climb out of cudart; each frame costs an unwind step */
typedef struct {
  void *frames[BEGIN_SITE_FRAMES];
  int n;
} begin_site;

/* Symbolizes with dladdr, which takes the loader's lock: never call it with
 * model_lock held (a thread inside dlopen may be waiting for model_lock in a
 * wrapper while holding the loader's lock). */
static void begin_site_text(const begin_site *b, char *buf, size_t cap) {
  buf[0] = 0;
  if (b && b->n > 0)
    cg_native_where_frames(b->frames, (size_t)b->n, buf, cap);
}

void cg_guard_init(void) {
  if (!model)
    model = cg_model_new();
}

void *cg_capture_begin_enter(void) {
  cg_priming_before_begin();
  /* The begin site is taken before the gate: the first backtrace may take
   * the loader's lock, and a thread inside dlopen may be waiting for the gate. */
  begin_site *site = malloc(sizeof *site);
  if (site)
    site->n = backtrace(site->frames, BEGIN_SITE_FRAMES);
  pthread_rwlock_rdlock(&gate);
  __atomic_add_fetch(&cg_begins_in_flight, 1, __ATOMIC_ACQ_REL);
  return site;
}

static void capture_begun(uint64_t key, cg_capture_mode mode, bool into_graph, begin_site *site);

void cg_capture_begin_leave(void *site, CUresult r, uint64_t key, cg_capture_mode mode, bool into_graph) {
  if (r == CUDA_SUCCESS)
    capture_begun(key, mode, into_graph, site);
  else
    free(site);
  __atomic_sub_fetch(&cg_begins_in_flight, 1, __ATOMIC_ACQ_REL);
  pthread_rwlock_unlock(&gate);
}

static void capture_begun(uint64_t key, cg_capture_mode mode, bool into_graph, begin_site *site) {
  CUcontext ctx = NULL;
  if (cg_drv.CtxGetCurrent)
    cg_drv.CtxGetCurrent(&ctx);
  pthread_mutex_lock(&model_lock);
  if (!model) {
    pthread_mutex_unlock(&model_lock);
    free(site);
    return;
  }
  cg_capture *c = cg_model_begin(model, key, (uint64_t)(uintptr_t)ctx, mode, cg_self_tid(), into_graph,
                                 cg_now_ns(), site);
  if (!c) {
    /* The model still has a capture open on this stream, so it missed an
     * end: close the stale one and track the new one. */
    cg_capture stale;
    if (cg_model_end(model, key, false, cg_now_ns(), &stale) == 0)
      free(stale.user);
    c = cg_model_begin(model, key, (uint64_t)(uintptr_t)ctx, mode, cg_self_tid(), into_graph, cg_now_ns(), site);
  }
  if (!c)
    free(site);
  __atomic_store_n(&cg_open_captures, (unsigned)cg_model_open_count(model), __ATOMIC_RELEASE);
  pthread_mutex_unlock(&model_lock);
}

void cg_capture_end_enter(void) { pthread_rwlock_rdlock(&gate); }

CUresult cg_capture_end_leave(uint64_t key, CUresult r, CUgraph *graph) {
  pthread_mutex_lock(&model_lock);
  cg_capture *open = model ? cg_model_find(model, key) : NULL;
  if (!open) {
    pthread_mutex_unlock(&model_lock);
    pthread_rwlock_unlock(&gate);
    return r;
  }
  /* The model says invalid but the driver returned a graph: capguard itself
   * refused a call in this capture (emulating an older driver), so the
   * capture must fail the way that driver would have failed it. */
  bool emulated_break = open->status == CG_CAPTURE_INVALIDATED && r == CUDA_SUCCESS;
  if (emulated_break)
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  cg_capture closed;
  cg_model_end(model, key, r == CUDA_SUCCESS, cg_now_ns(), &closed);
  if (r != CUDA_SUCCESS)
    captures_broken++;
  __atomic_store_n(&cg_open_captures, (unsigned)cg_model_open_count(model), __ATOMIC_RELEASE);
  pthread_mutex_unlock(&model_lock);
  pthread_rwlock_unlock(&gate);

  if (emulated_break && graph && *graph) {
    if (cg_drv.GraphDestroy)
      cg_drv.GraphDestroy(*graph);
    *graph = NULL;
  }
  begin_site *site = closed.user;
  if (cg_output_has_log()) {
    char where[512];
    begin_site_text(site, where, sizeof where);
    cg_output_capture(&closed, where);
  }
  free(site);
  cg_policy_run_deferred();
  return r;
}

/* How many open captures prohibit this thread. */
static size_t prohibitor_count(void) {
  pthread_mutex_lock(&model_lock);
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), NULL, 0) : 0;
  pthread_mutex_unlock(&model_lock);
  return n;
}

/* The open capture that prohibits this thread (oldest first) and where it
 * began, copied out under the lock, and how many do. Counts the event. */
static size_t prohibitor(cg_capture *first, begin_site *site) {
  cg_capture *p[1];
  site->n = 0;
  pthread_mutex_lock(&model_lock);
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), p, 1) : 0;
  if (n) {
    *first = *p[0];
    cg_model_count_event(model, cg_self_tid(), cg_self_mode());
    if (p[0]->user)
      *site = *(const begin_site *)p[0]->user;
  }
  pthread_mutex_unlock(&model_lock);
  return n;
}

static void invalidate_prohibitors(cg_capture *first) {
  pthread_mutex_lock(&model_lock);
  if (model)
    cg_model_invalidate_prohibitors(model, cg_self_tid(), cg_self_mode());
  pthread_mutex_unlock(&model_lock);
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
  begin_site site;
  cg_image_info image;
} event_scratch;

static void report(cg_event *e, event_scratch *s) {
  e->pid = (uint64_t)getpid();
  e->tid = cg_self_tid();
  e->time_ns = cg_now_ns();
  e->thread_mode = cg_self_mode();
  e->driver_version = cg_driver_version();
  e->emulated_version = cg_cfg.emulate_driver;
  begin_site_text(&s->site, s->began, sizeof s->began); /* dladdr: never under model_lock or the gate */
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

CUresult cg_guard_load(const cg_load *l) {
  /* Cheap check first: loads while another thread's capture does not
   * prohibit this one need no inspection. */
  cg_gate_lock();
  if (!prohibitor_count()) {
    cg_capture none;
    CUresult r = load_and_ungate(l, &none);
    if (r != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      return r;
    event_scratch *s = calloc(1, sizeof *s);
    if (s) {
      cg_event e = {.kind = CG_EV_MODULE_LOAD, .call = cg_ep_name[l->ep]};
      report_unexplained_refusal(&e, s, r);
      free(s);
    }
    return r;
  }
  cg_gate_unlock();

  event_scratch *s = calloc(1, sizeof *s);
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
  begin_site site;
  e.n_prohibitors = prohibitor(&e.capture, &site);
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
  cg_event e = {.kind = CG_EV_MODULE_UNLOAD, .call = cg_ep_name[u->ep], .driver_result = -1,
                .module = (uint64_t)(uintptr_t)u->handle};
  begin_site site;
  cg_gate_lock();
  e.n_prohibitors = prohibitor(&e.capture, &site);
  if (!e.n_prohibitors || !s) {
    CUresult r = u->invoke(u->handle);
    cg_gate_unlock();
    if (s && r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      report_unexplained_refusal(&e, s, r);
    free(s);
    return r;
  }
  CUresult r;
  if (cg_policy_defer_unload(u)) {
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
  e.result = (int)r;
  s->site = site;
  report(&e, s);
  free(s);
  return r;
}

/* True when no open capture prohibits the calling thread (deferred work may run). */
bool cg_guard_self_unprohibited(void) { return prohibitor_count() == 0; }

size_t cg_guard_prohibitor_refs(cg_capture_ref *out, size_t cap) {
  cg_capture *p[16];
  if (cap > 16)
    cap = 16;
  pthread_mutex_lock(&model_lock);
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), p, cap) : 0;
  for (size_t i = 0; i < n && i < cap; i++)
    out[i] = (cg_capture_ref){p[i]->stream, p[i]->id};
  pthread_mutex_unlock(&model_lock);
  return n;
}

bool cg_guard_refs_closed(const cg_capture_ref *refs, size_t n) {
  bool closed = true;
  pthread_mutex_lock(&model_lock);
  for (size_t i = 0; model && closed && i < n; i++) {
    cg_capture *c = cg_model_find(model, refs[i].stream);
    closed = !c || c->id != refs[i].id;
  }
  pthread_mutex_unlock(&model_lock);
  return closed;
}

/* Fork: a child inherits the parent's memory but none of its other threads,
 * so the lock must not be held across fork and the child's model starts
 * empty (CUDA captures do not survive fork). */
void cg_guard_atfork_prepare(void) {
  pthread_rwlock_wrlock(&gate);
  pthread_mutex_lock(&model_lock);
}
void cg_guard_atfork_parent(void) {
  pthread_mutex_unlock(&model_lock);
  pthread_rwlock_unlock(&gate);
}
void cg_guard_atfork_child(void) {
  pthread_mutex_init(&model_lock, NULL);
  gate = (pthread_rwlock_t)PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
  cg_begins_in_flight = 0;
  /* The parent's captures are leaked in the child rather than freed: their
   * user pointers belong to the parent's bookkeeping. Small and one-off. */
  model = cg_model_new();
  __atomic_store_n(&cg_open_captures, 0, __ATOMIC_RELEASE);
  memset(counters_events, 0, sizeof counters_events);
  memset(counters_verdicts, 0, sizeof counters_verdicts);
  captures_broken = 0;
  self_tid = 0;
}

void cg_guard_exit(void) {
  cg_summary sum = {.pid = (uint64_t)getpid()};
  pthread_mutex_lock(&model_lock);
  sum.captures_begun = model ? cg_model_begun_total(model) : 0;
  sum.captures_broken = captures_broken;
  pthread_mutex_unlock(&model_lock);
  memcpy(sum.events, counters_events, sizeof sum.events);
  memcpy(sum.verdicts, counters_verdicts, sizeof sum.verdicts);
  cg_priming_summary(&sum);
  cg_policy_at_exit(&sum);
  cg_output_summary(&sum);
}
