/* Loads on the request path (serving.h). One small lock guards the state;
 * it is taken only by loads outside capture once watching, by capture
 * begins and ends while serving is not yet confirmed, and by the first
 * launch after an end: never on a launch's or a capture's fast path. */
#include "serving.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/clock.h"
#include "capguard/env_value.h"
#include "capguard/image.h"
#include "capture_time.h"
#include "config.h"
#include "load_image.h"
#include "live_captures.h"
#include "locks.h"
#include "priming.h"
#include "report.h"
#include "object_bytes.h"
#include "stack.h"
#include "warn.h"

unsigned cg_serving_watch;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t candidate_ns;  /* the first launch after the latest capture's end; 0: none */
static uint64_t began_ns;      /* serving began (monotonic), 0: not yet */
static uint64_t after_ns;      /* CAPGUARD_SERVING_AFTER: when it begins whatever happens, 0: unset */
/* Loads after the candidate launch, within its quiet window: counted once
 * the window passes with no capture, dropped if one begins (a wave). */
static uint64_t pending_n, pending_ns, pending_first;
static uint64_t n_loads, loads_ns, first_after_ns;

void cg_serving_init(void) {
  const char *s = cg_cfg.serving_after; /* NULL in secure execution (config.h) */
  unsigned secs = 0;
  if (!s || !*s || cg_cfg.mode == CG_RUN_OFF)
    return;
  if (cg_parse_hang_seconds(s, &secs) != 0) {
    cg_warn("CAPGUARD_SERVING_AFTER=%s is not whole seconds from 1 to 86400; serving begins at the "
            "first graph launch after the start-up's last capture", s);
    return;
  }
  after_ns = cg_monotonic_ns() + (uint64_t)secs * 1000000000ull;
  __atomic_store_n(&cg_serving_watch, 1, __ATOMIC_RELAXED);
}

/* Serving confirmed when the candidate's window passed with no capture, or
 * CAPGUARD_SERVING_AFTER's moment came, or the process ends with a
 * candidate no capture followed (lock held). */
static void settle(uint64_t now, bool at_exit) {
  if (began_ns)
    return;
  if (after_ns && now >= after_ns)
    began_ns = after_ns;
  else if (candidate_ns && (at_exit || now - candidate_ns >= CG_SERVING_QUIET_NS))
    began_ns = candidate_ns;
  if (!began_ns)
    return;
  if (pending_n && !n_loads)
    first_after_ns = pending_first;
  n_loads += pending_n;
  loads_ns += pending_ns;
  pending_n = pending_ns = 0;
}

void cg_serving_capture_begun(void) {
  if (!__atomic_load_n(&candidate_ns, __ATOMIC_RELAXED) || __atomic_load_n(&began_ns, __ATOMIC_RELAXED))
    return;
  cg_lock(&lock);
  settle(cg_monotonic_ns(), false);
  if (!began_ns) { /* a wave of the start-up: what was pending was start-up */
    candidate_ns = 0;
    pending_n = pending_ns = 0;
  }
  cg_unlock(&lock);
}

void cg_serving_capture_over(void) {
  if (cg_cfg.mode == CG_RUN_OFF || __atomic_load_n(&began_ns, __ATOMIC_RELAXED) ||
      (__atomic_load_n(&cg_launch_watch, __ATOMIC_RELAXED) & CG_WATCH_SERVING))
    return;
  cg_launch_watch_set(CG_WATCH_SERVING);
  /* found now, at a capture's end, rather than by a request's first load
   * (it names kernels on stderr; a lookup of the loader's) */
  (void)cg_host_demangler();
}

void cg_serving_graph_launch(void) {
  cg_launch_watch_clear(CG_WATCH_SERVING);
  cg_lock(&lock);
  if (!began_ns && !candidate_ns) {
    candidate_ns = cg_monotonic_ns();
    __atomic_store_n(&cg_serving_watch, 1, __ATOMIC_RELAXED);
  }
  cg_unlock(&lock);
}

/* The load itself, as the wrapper's own path makes it: under the capture
 * gate, so that no capture begins between the look and the driver's call.
 * false when one has begun: the capture's path decides. */
static bool make(const cg_load *l, CUresult *r) {
  if (!cg_gate_lock_if_idle())
    return false;
  *r = l->invoke(l);
  cg_gate_unlock();
  return true;
}

/* Where the load stands: on the request path (confirmed, or provisional
 * within the window), or not (before serving). Counted here. */
typedef enum { NOT_YET, PROVISIONAL, CONFIRMED } standing;

static standing count(uint64_t t0, uint64_t took, uint64_t *since) {
  cg_lock(&lock);
  settle(t0, false);
  standing st = NOT_YET;
  if (began_ns) {
    st = CONFIRMED;
    *since = t0 - began_ns;
    if (!n_loads++)
      first_after_ns = *since;
    loads_ns += took;
  } else if (candidate_ns) {
    st = PROVISIONAL;
    *since = t0 - candidate_ns;
    if (!pending_n++)
      pending_first = *since;
    pending_ns += took;
  }
  cg_unlock(&lock);
  return st;
}

/* Inspects the load's image into s (kind, kernels, hash, arch), the
 * stack taken; false when there is no image capguard can read. */
/* Without decompressing compressed entries for their names: that costs a
 * runtime fatbin tens of milliseconds, which the request would pay (measured
 * on an H200: 6 served loads took 153 ms with it, 3 ms without). */
static bool inspect(const cg_load *l, cg_report_scratch *s) {
  return l->image && cg_load_image_inspect(l->image, CG_IMAGE_MAX_BYTES, &s->image, false) == 0;
}

bool cg_serving_load(const cg_load *l, CUresult *result) {
  cg_report_scratch *s = cg_report_room("a request-path load's report");
  if (s)
    cg_report_take_stack(s);
  bool known = s && inspect(l, s);
  cg_load_opts opts = {0};
  bool servable = cg_load_opts_canon(&l->opts, &opts).verdict == CG_OPTS_SERVABLE;
  cg_load_key key = {&opts, &l->opts};
  CUresult r = CUDA_SUCCESS;
  cg_verdict v = CG_VERDICT_ALLOWED;
  /* the load call's own time: the hand-out of a served copy, or the driver's load */
  uint64_t t0 = cg_monotonic_ns();
  void *h = known && servable && cg_cfg.mode == CG_RUN_GUARD ? cg_priming_take(&s->image, l->is_library, &key, NULL, 0)
                                                               : NULL;
  if (h) {
    *l->out = h;
    v = CG_VERDICT_SERVED;
  } else if (!make(l, &r)) { /* a capture began meanwhile */
    free(s);
    return false;
  }
  *result = r;
  uint64_t took = cg_monotonic_ns() - t0, since = 0;
  standing st = count(t0, took, &since);
  if (st == NOT_YET || !s) {
    free(s);
    return true;
  }
  if (!h && r == CUDA_SUCCESS && known && servable) {
    cg_priming_loaded(*l->out, &s->image, l->is_library, &opts);
    /* recorded like a capture load: the next run preloads it before its
     * first capture and serves it here */
    cg_priming_record(&s->image, l->is_library, &opts, CG_VERDICT_ALLOWED);
    cg_priming_refresh_served(false);
  }
  cg_event e = {.kind = CG_EV_REQUEST_LOAD, .call = cg_ep_name(l->ep), .verdict = v, .result = (int)r,
                .driver_result = h ? -1 : (int)r, .with_options = l->with_options,
                .image = known ? &s->image : NULL, .load_ns = took, .after_serving_ns = since,
                .provisional = st == PROVISIONAL};
  if (r == CUDA_SUCCESS && l->out && *l->out)
    e.module = (uint64_t)(uintptr_t)*l->out;
  /* compressed entries left unread for their names: where capguard report
   * can read them instead (a library's own data, as the runtime's are) */
  char object[512];
  if (known && s->image.unpack_room &&
      cg_object_bytes(s->image.data, s->image.size, object, sizeof object, &e.image_offset))
    e.image_object = object;
  cg_report_and_free(&e, s, NULL, NULL);
  return true;
}

void cg_serving_summary(cg_summary *s, bool at_exit) {
  if (at_exit ? !cg_exit_lock(&lock, "the request-path counts") : cg_trylock(&lock) != 0)
    return;
  settle(cg_monotonic_ns(), at_exit);
  s->serving_began = began_ns != 0;
  s->request_loads = n_loads;
  s->request_load_ns = loads_ns;
  s->first_request_after_ns = first_after_ns;
  cg_unlock(&lock);
}

void cg_serving_atfork_child(void) {
  pthread_mutex_init(&lock, NULL);
  /* The child serves as its parent did; its loads are its own to count. */
  pending_n = pending_ns = pending_first = 0;
  n_loads = loads_ns = first_after_ns = 0;
}
