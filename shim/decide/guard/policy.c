#include "policy.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "warn.h"
#include "priming.h"
#include "locks.h"

/* Drivers before CUDA 12.3 refuse module loads while a capture prohibits the
 * thread (docs/driver-semantics.md, "Assumed, not measured here"). */
#define FIRST_DRIVER_ALLOWING_LOADS 12030

static bool driver_refuses_loads(void) {
  int v = cg_effective_driver_version();
  return v > 0 && v < FIRST_DRIVER_ALLOWING_LOADS;
}

/* Rescue: the one call is made with the thread in relaxed mode, where no
 * capture prohibits it (measured on driver 580; unproven on older drivers,
 * hence opt-in). The real exchange is called directly, so capguard's record
 * of the thread's own mode stays what the program set. */
CUresult cg_policy_call_relaxed(CUresult (*invoke)(const void *args), const void *args) {
  typedef CUresult (*exchange_fn)(CUstreamCaptureMode *);
  exchange_fn exchange = CG_REAL(cuThreadExchangeStreamCaptureMode, exchange_fn);
  if (!exchange)
    return invoke(args);
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (exchange(&m) != CUDA_SUCCESS)
    return invoke(args);
  CUresult r = invoke(args);
  exchange(&m); /* m holds the mode the thread had: put it back */
  return r;
}

static CUresult invoke_load(const void *l) { return ((const cg_load *)l)->invoke(l); }

bool cg_policy_load(const cg_load *l, const cg_image_info *image, const cg_load_key *key, char *differ,
                    size_t cap, CUresult *result, cg_verdict *verdict) {
  /* A served copy was preloaded with the options the load asks for (max
   * registers, optimisation level, target, log sizes...): the module its
   * own call would have made, its output options written as the preload's
   * were. Options capguard cannot reproduce (no key) go on as an unprimed load. */
  if (cg_cfg.mode == CG_RUN_GUARD && image && image->kind != CG_IMAGE_UNKNOWN && key) {
    void *h = cg_priming_take(image, l->is_library, key, differ, cap);
    if (h) {
      *l->out = h;
      *result = CUDA_SUCCESS;
      *verdict = CG_VERDICT_SERVED;
      return true;
    }
  }
  if (!driver_refuses_loads())
    return false;
  if (cg_cfg.mode == CG_RUN_GUARD && cg_cfg.rescue) {
    *result = cg_policy_call_relaxed(invoke_load, l);
    *verdict = *result == CUDA_SUCCESS ? CG_VERDICT_RESCUED : CG_VERDICT_FAILED;
    return true;
  }
  if (cg_cfg.emulate_driver) {
    *result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    *verdict = CG_VERDICT_EMULATED;
    return true;
  }
  return false; /* a real old driver refuses by itself */
}

/* ---- deferred calls: unloads, frees, graph-exec destroys */

/* A deferred call waits for every capture that prohibited it when it was
 * asked for, not only for the asking thread to be free: a thread-local
 * capture stays open after another thread's global capture ends, and may
 * still hold the module's kernels (or use the memory). More prohibitors
 * than fit: wait until nothing captures. */
#define MAX_WAITED_FOR 16
typedef struct pending_unload {
  void *handle;
  CUresult (*invoke)(void *handle);
  cg_capture_ref waits_for[MAX_WAITED_FOR];
  size_t n_waits;
  bool wait_for_all;
  struct pending_unload *next;
} pending_unload;

/* Bounded like every table of the shim: a program that defers more calls
 * than this during one capture gets the rest passed to the driver, as
 * without capguard. */
#define MAX_PENDING 4096

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_unload *pending;
static unsigned pending_count;

bool cg_policy_defer(void *handle, CUresult (*invoke)(void *handle), bool *oom) {
  if (cg_cfg.mode != CG_RUN_GUARD)
    return false;
  cg_capture_ref refs[MAX_WAITED_FOR];
  size_t n_refs = cg_captures_prohibitor_refs(refs, MAX_WAITED_FOR);
  cg_lock(&pending_lock);
  for (pending_unload *p = pending; p; p = p->next)
    if (p->handle == handle && p->invoke == invoke) { /* asked twice: it still runs once */
      cg_unlock(&pending_lock);
      return true;
    }
  bool full = pending_count >= MAX_PENDING;
  pending_unload *p = full ? NULL : malloc(sizeof *p);
  if (p) {
    p->handle = handle;
    p->invoke = invoke;
    p->wait_for_all = n_refs > MAX_WAITED_FOR;
    p->n_waits = p->wait_for_all ? MAX_WAITED_FOR : n_refs;
    memcpy(p->waits_for, refs, p->n_waits * sizeof *refs);
    p->next = pending;
    pending = p;
    __atomic_add_fetch(&pending_count, 1, __ATOMIC_RELEASE);
  }
  cg_unlock(&pending_lock);
  *oom = p == NULL; /* no room: full, or out of memory */
  return p != NULL;
}

void cg_policy_warn_no_room(void) {
  char what[80];
  snprintf(what, sizeof what, "queueing a deferred call, or %d were queued already", MAX_PENDING);
  cg_warn_oom(what);
}

/* Deferred calls never break a capture: they run with the capture gate
 * held exclusive (no capture can begin or end meanwhile), only when no open
 * capture prohibits the calling thread, and only once the captures each one
 * waits for have ended. The driver then has no reason to refuse them. */
void cg_policy_run_deferred(void) {
  if (!__atomic_load_n(&pending_count, __ATOMIC_ACQUIRE))
    return;
  typedef struct {
    void *handle;
    CUresult r;
  } failure;
  failure failed[8];
  size_t n_failed = 0, more_failed = 0;
  cg_gate_lock();
  if (cg_captures_self_unprohibited()) {
    /* Take out the entries none of whose captures is open any more. */
    cg_lock(&pending_lock);
    pending_unload *list = NULL, **link = &pending;
    unsigned left = 0;
    while (*link) {
      pending_unload *p = *link;
      bool ready = p->wait_for_all ? cg_nothing_captures() : cg_captures_refs_closed(p->waits_for, p->n_waits);
      if (ready) {
        *link = p->next;
        p->next = list; /* list ends up oldest first: pending is newest first */
        list = p;
      } else {
        link = &p->next;
        left++;
      }
    }
    __atomic_store_n(&pending_count, left, __ATOMIC_RELEASE);
    cg_unlock(&pending_lock);
    while (list) {
      pending_unload *n = list->next;
      CUresult r = list->invoke(list->handle);
      if (r != CUDA_SUCCESS && n_failed < sizeof failed / sizeof failed[0])
        failed[n_failed++] = (failure){list->handle, r};
      else if (r != CUDA_SUCCESS)
        more_failed++;
      free(list);
      list = n;
    }
  }
  cg_gate_unlock();
  /* Said after the gate is released: stderr may block. */
  for (size_t i = 0; i < n_failed; i++)
    cg_warn("deferred call on %p (an unload, free or graph-exec destroy) failed with error %d",
            failed[i].handle, (int)failed[i].r);
  if (more_failed)
    cg_warn("%zu more deferred calls failed", more_failed);
}

void cg_policy_at_exit(void) {
  unsigned n = __atomic_load_n(&pending_count, __ATOMIC_ACQUIRE);
  if (n && !cg_cfg.quiet)
    cg_warn("%u deferred calls (unloads, frees, graph-exec destroys) were still waiting for a "
            "capture to end at exit; left to the driver, which frees them with the process",
            n);
}

void cg_policy_atfork_child(void) {
  pthread_mutex_init(&pending_lock, NULL);
  pending = NULL; /* the parent's modules are not the child's to unload */
  pending_count = 0;
}
