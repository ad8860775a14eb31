#include "live_captures.h"
#include "model_lock.h"

#include <execinfo.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "capguard/frame_filter.h"
#include "driver.h"
#include "output.h"
#include "stack.h"
#include "warn.h"

cg_capture_activity cg_activity __attribute__((aligned(8)));

/* The capture gate (live_captures.h). So whenever capguard decides, the model is
 * what the driver sees: no capture can be begun (or ended) in the driver and
 * not yet (or no longer) in the model, and none can be begun between
 * capguard's check and the driver's call. Writer-preferring, so that a
 * stream of begins cannot starve a decision; nothing takes it twice on one
 * thread. Never held across a report, a log write or the loader's lock. */
static pthread_rwlock_t gate = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

void cg_gate_lock(void) { pthread_rwlock_wrlock(&gate); }
void cg_gate_unlock(void) { pthread_rwlock_unlock(&gate); }

static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_model *model;
static uint64_t captures_broken;

/* For break_rules.c (model_lock.h). */
cg_model *cg_captures_model_lock(void) {
  pthread_mutex_lock(&model_lock);
  return model;
}
void cg_captures_model_unlock(void) { pthread_mutex_unlock(&model_lock); }

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

/* The caller's Python line: the innermost frame outside the frameworks'
 * machinery (torch/cuda/graphs.py's capture_begin is not what a person
 * wrote), or the innermost frame when all are. */
static void python_site(char *buf, size_t cap) {
  cg_py_frame py[16];
  char text[4096];
  size_t n = cg_python_stack(py, sizeof py / sizeof py[0], text, sizeof text);
  buf[0] = 0;
  if (!n)
    return;
  size_t pick = 0;
  while (pick < n && cg_py_file_is_machinery(py[pick].file))
    pick++;
  if (pick == n)
    pick = 0;
  snprintf(buf, cap, "%s:%d in %s", py[pick].file ? py[pick].file : "?", py[pick].line,
           py[pick].func ? py[pick].func : "?");
}

cg_begin_site *cg_begin_site_take(void) { return cg_site_take(CG_BEGIN_SITE_FRAMES); }

cg_begin_site *cg_site_take(int depth) {
  cg_begin_site *site = malloc(sizeof *site);
  if (site) {
    site->n = backtrace(site->frames, depth < CG_SITE_MAX_FRAMES ? depth : CG_SITE_MAX_FRAMES);
    python_site(site->python, sizeof site->python);
  } else
    cg_warn_oom("where a capture began");
  return site;
}

/* Symbolizes with dladdr, which takes the loader's lock: never call it with
 * model_lock held (a thread inside dlopen may be waiting for model_lock in a
 * wrapper while holding the loader's lock). */
void cg_begin_site_text(const cg_begin_site *b, char *buf, size_t cap) {
  buf[0] = 0;
  if (!b)
    return;
  char native[384] = "";
  if (b->n > 0)
    cg_native_where_frames(b->frames, (size_t)b->n, native, sizeof native);
  if (b->python[0] && native[0])
    snprintf(buf, cap, "%s (%s)", b->python, native);
  else
    snprintf(buf, cap, "%s", b->python[0] ? b->python : native);
}

void cg_captures_init(void) {
  if (!model)
    model = cg_model_new();
  if (!model)
    cg_warn_oom("the capture model");
}

void cg_captures_begin_enter(void) {
  pthread_rwlock_rdlock(&gate);
  __atomic_add_fetch(&cg_activity.n.begins_in_flight, 1, __ATOMIC_ACQ_REL);
}

static void capture_begun(uint64_t key, uint64_t driver_id, cg_capture_mode mode, bool into_graph,
                          cg_begin_site *site) {
  CUcontext ctx = NULL;
  if (cg_drv.CtxGetCurrent)
    cg_drv.CtxGetCurrent(&ctx);
  /* Legacy-stream work breaks only the captures of blocking streams (third
   * matrix). A per-thread default stream (key with its low bits set) is
   * blocking; unknown flags count as blocking (the driver's answer decides). */
  unsigned flags = 0;
  bool nonblocking = (key & 3) != 3 && cg_drv.StreamGetFlags &&
                     cg_drv.StreamGetFlags((CUstream)(uintptr_t)key, &flags) == CUDA_SUCCESS &&
                     (flags & CU_STREAM_NON_BLOCKING);
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
    if (cg_model_end(model, key, false, cg_now_ns(), &stale) == 0) {
      cg_model_forget_events_of(model, stale.id);
      free(stale.user);
      free(stale.broken_by);
    }
    c = cg_model_begin(model, key, (uint64_t)(uintptr_t)ctx, mode, cg_self_tid(), into_graph, cg_now_ns(), site);
  }
  if (c) {
    c->driver_id = driver_id;
    c->nonblocking = nonblocking;
  } else
    free(site);
  __atomic_store_n(&cg_activity.n.open, (unsigned)cg_model_open_count(model), __ATOMIC_RELEASE);
  pthread_mutex_unlock(&model_lock);
}

void cg_captures_begin_leave(cg_begin_site *site, CUresult r, uint64_t key, uint64_t driver_id,
                             cg_capture_mode mode, bool into_graph) {
  if (r == CUDA_SUCCESS)
    capture_begun(key, driver_id, mode, into_graph, site);
  else
    free(site);
  __atomic_sub_fetch(&cg_activity.n.begins_in_flight, 1, __ATOMIC_ACQ_REL);
  pthread_rwlock_unlock(&gate);
}

void cg_captures_end_enter(void) { pthread_rwlock_rdlock(&gate); }

bool cg_captures_end_leave(uint64_t key, CUresult *result, cg_capture *closed, bool *emulated_break) {
  pthread_mutex_lock(&model_lock);
  cg_capture *open = model ? cg_model_find(model, key) : NULL;
  if (!open) {
    pthread_mutex_unlock(&model_lock);
    pthread_rwlock_unlock(&gate);
    return false;
  }
  /* capguard itself refused a call in this capture (emulating an older
   * driver) and the driver returned a graph: the capture must fail the way
   * that driver would have failed it. Any other invalidation is the
   * driver's: if it returned a graph all the same, the capture stands. */
  *emulated_break = open->emulated && *result == CUDA_SUCCESS;
  if (*emulated_break)
    *result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  uint64_t id = open->id;
  cg_model_end(model, key, *result == CUDA_SUCCESS, cg_now_ns(), closed);
  cg_model_forget_events_of(model, id);
  if (*result != CUDA_SUCCESS)
    captures_broken++;
  __atomic_store_n(&cg_activity.n.open, (unsigned)cg_model_open_count(model), __ATOMIC_RELEASE);
  pthread_mutex_unlock(&model_lock);
  pthread_rwlock_unlock(&gate);
  return true;
}

size_t cg_captures_prohibitor_count(void) {
  pthread_mutex_lock(&model_lock);
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), NULL, 0) : 0;
  pthread_mutex_unlock(&model_lock);
  return n;
}

bool cg_captures_self_unprohibited(void) { return cg_captures_prohibitor_count() == 0; }

size_t cg_captures_prohibitor(cg_capture *first, cg_begin_site *site) {
  cg_capture *p[1];
  site->n = 0;
  pthread_mutex_lock(&model_lock);
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), p, 1) : 0;
  if (n) {
    *first = *p[0];
    cg_model_count_event(model, cg_self_tid(), cg_self_mode());
    if (p[0]->user)
      *site = *(const cg_begin_site *)p[0]->user;
  }
  pthread_mutex_unlock(&model_lock);
  return n;
}


size_t cg_captures_prohibitor_refs(cg_capture_ref *out, size_t cap) {
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

bool cg_captures_refs_closed(const cg_capture_ref *refs, size_t n) {
  bool closed = true;
  pthread_mutex_lock(&model_lock);
  for (size_t i = 0; model && closed && i < n; i++) {
    cg_capture *c = cg_model_find(model, refs[i].stream);
    closed = !c || c->id != refs[i].id;
  }
  pthread_mutex_unlock(&model_lock);
  return closed;
}

uint64_t cg_captures_begun_total(void) {
  pthread_mutex_lock(&model_lock);
  uint64_t n = model ? cg_model_begun_total(model) : 0;
  pthread_mutex_unlock(&model_lock);
  return n;
}

uint64_t cg_captures_broken(void) {
  pthread_mutex_lock(&model_lock);
  uint64_t n = captures_broken;
  pthread_mutex_unlock(&model_lock);
  return n;
}

/* Fork: a child inherits the parent's memory but none of its other threads,
 * so the locks must not be held across fork and the child's model starts
 * empty (CUDA captures do not survive fork). */
void cg_captures_atfork_prepare(void) {
  pthread_rwlock_wrlock(&gate);
  pthread_mutex_lock(&model_lock);
}
void cg_captures_atfork_parent(void) {
  pthread_mutex_unlock(&model_lock);
  pthread_rwlock_unlock(&gate);
}
void cg_captures_atfork_child(void) {
  pthread_mutex_init(&model_lock, NULL);
  gate = (pthread_rwlock_t)PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
  cg_activity.n.begins_in_flight = 0;
  /* The parent's captures are leaked in the child rather than freed: their
   * user pointers belong to the parent's bookkeeping. Small and one-off. */
  model = cg_model_new();
  __atomic_store_n(&cg_activity.n.open, 0, __ATOMIC_RELEASE);
  captures_broken = 0;
  self_tid = 0;
}
