#include "guard.h"
#include "forks.h"
#include "locks.h"
#include "signals_held.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capguard/file_read.h"
#include "capguard/image.h"
#include "captures_exit.h"
#include "config.h"
#include "device_arch.h"
#include "driver.h"
#include "fleet_metrics.h"
#include "hang_launches.h"
#include "hang_slots.h"
#include "output.h"
#include "policy.h"
#include "priming.h"
#include "query_fence.h"
#include "load_image.h"
#include "report.h"
#include "serving.h"
#include "stack.h"
#include "stale_watch.h"


/* Whether a stream about to begin capturing is non-blocking: legacy-stream
 * work breaks only the captures of blocking streams (third matrix). Asked
 * before the driver's begin, and only of a stream the driver says is idle:
 * cuStreamGetFlags of a capturing stream is refused with 900 and
 * invalidates its capture, in every mode; of an idle stream it is safe, from
 * any thread, while others capture (measured: H100, driver 580). The
 * per-thread and legacy streams are blocking; unknown flags count as
 * blocking (the driver's answer then decides). */
static __thread bool begin_nonblocking __attribute__((tls_model("initial-exec")));
/* The beginning thread's current context, asked once a begin: priming and
 * the model both want it. */
static __thread CUcontext begin_ctx __attribute__((tls_model("initial-exec")));

/* A stream's flags do not change while it lives: each thread keeps the
 * answer for the last few streams it began captures on (two driver calls
 * a begin saved), until any stream is destroyed (cg_stream_generation: the
 * driver may hand a destroyed stream's handle to a new one). */
unsigned long cg_stream_generation;
enum { KEPT_FLAGS = 4 };
typedef struct {
  CUstream stream;
  unsigned long generation; /* + 1: 0 is an empty entry */
  bool nonblocking;
} kept_flags;
static __thread kept_flags flags_kept[KEPT_FLAGS] __attribute__((tls_model("initial-exec")));

static bool ask_nonblocking(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  cuuint64_t id = 0;
  unsigned flags = 0;
  return cg_drv.StreamGetCaptureInfo(s, &st, &id) == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_NONE &&
         cg_drv.StreamGetFlags(s, &flags) == CUDA_SUCCESS && (flags & CU_STREAM_NON_BLOCKING);
}

static bool stream_nonblocking(CUstream s, bool ptsz) {
  if (cg_stream_key_per_thread(cg_stream_key(s, ptsz)) || !cg_drv.StreamGetCaptureInfo || !cg_drv.StreamGetFlags)
    return false;
  /* Read before the driver is asked: a destroy after this makes the
   * answer kept here stale, and the next begin asks again. */
  unsigned long gen = __atomic_load_n(&cg_stream_generation, __ATOMIC_ACQUIRE) + 1;
  kept_flags *k = &flags_kept[((uintptr_t)s >> 4) % KEPT_FLAGS];
  if (k->stream == s && k->generation == gen)
    return k->nonblocking;
  bool nb = ask_nonblocking(s);
  *k = (kept_flags){s, gen, nb};
  return nb;
}

void *cg_capture_begin_enter(void *ra, void *ra_slot, CUstream s, bool ptsz) {
  cg_fleet_start_once(); /* before the lock region: it writes a file */
  /* One lock region from here to the gate's release in
   * cg_capture_begin_leave (locks.h): priming's, the native and Python
   * sites' and the gate's locks each switched the cancel state on and off,
   * three regions before the gate; now the gate's is the only one. */
  cg_lock_hold();
  begin_nonblocking = stream_nonblocking(s, ptsz);
  begin_ctx = NULL;
  if (cg_drv.CtxGetCurrent && cg_drv.CtxGetCurrent(&begin_ctx) != CUDA_SUCCESS)
    begin_ctx = NULL;
  cg_priming_before_begin(begin_ctx);
  /* The begin site is taken before the gate: the first backtrace may take
   * the loader's lock, and a thread inside dlopen may be waiting for the gate. */
  cg_begin_site *site = cg_begin_site_take(ra, ra_slot);
  cg_captures_begin_enter();
  cg_lock_let_go(); /* the gate, held until cg_capture_begin_leave, keeps the region */
  return site;
}

void cg_capture_begin_leave(void *site, CUresult r, CUstream s, bool ptsz, cg_capture_mode mode,
                            bool into_graph) {
  uint64_t key = cg_stream_key(s, ptsz);
  /* The driver's id lets a stream that joins the capture be told apart
   * (model/break_rules.c); asked, when it is (only where something may
   * need it now), under the gate held shared, which no driver call of
   * capguard's waits for. */
  uint64_t driver_id = r == CUDA_SUCCESS ? cg_captures_begun_driver_id(s, ptsz, key) : 0;
  cg_captures_begin_leave(site, r, key, driver_id, mode, into_graph, begin_nonblocking,
                          (uint64_t)(uintptr_t)begin_ctx);
  if (r == CUDA_SUCCESS) {
    cg_capture_time_begun();
    cg_serving_capture_begun();
  }
}

void cg_capture_end_enter(CUstream s, bool ptsz) { cg_captures_end_enter(cg_stream_key(s, ptsz)); }

/* "app.py:40 in step" and "app.py:40 in step (libfoo.so(f+0x1))" for the
 * capture record's first offender. dladdr: outside every capguard lock. */
static void offender_text(const cg_break *b, cg_offender *o, char *where, size_t cap) {
  cg_begin_site_text(&b->site, where, cap);
  *o = b->who;
  o->python = b->site.python;
  o->where = where;
}

/* Where a capture began, for its graph's execs (the hang watch): the site
 * itself, or a copy of one the slowest captures keep. Returns what the
 * caller frees. */
static cg_begin_site *site_to_graph(CUgraph g, cg_begin_site *site, bool kept, uint64_t id) {
  cg_begin_site *give = site;
  if (kept && (give = malloc(sizeof *give)) != NULL) /* the kept one is capture_time's */
    *give = *site;
  return give ? cg_hang_graph_captured(g, give, id) : NULL;
}

/* Writes the record of a capture that is over (its begin site and first
 * offender freed here, or the site handed to graph's execs when the hang
 * watch is on), then runs the deferred calls that may now run. */
static void capture_over(cg_capture *closed, bool ended, CUresult r, CUgraph graph) {
  cg_begin_site *site = closed->user;
  cg_break *broke = closed->broken_by;
  /* Symbolized only for a record that is written: dladdr scans a library's
   * whole symbol table (350 us for torch's). */
  if (cg_output_wants_capture(cg_capture_status_broken(closed->status))) {
    cg_signals held; /* dladdr and the output: not to be interrupted (signals_held.h) */
    cg_signals_hold(&held);
    char began[512], where[512];
    cg_begin_site_text(site, began, sizeof began);
    cg_offender off;
    cg_capture_record rec = {.capture = closed, .pid = cg_self_pid(), .began = began, .ended = ended,
                             .end_result = (int)r};
    if (broke) {
      offender_text(broke, &off, where, sizeof where);
      rec.broken_by = &off;
    }
    rec.repeats = closed->repeats;
    cg_output_capture(&rec);
    cg_signals_release(&held);
  }
  bool kept = cg_capture_time_ended(closed, site); /* the slowest keep where they began */
  if (graph && site)
    cg_begin_site_free(site_to_graph(graph, site, kept, closed->id));
  else if (!kept)
    cg_begin_site_free(site);
  if (broke)
    free(broke);
  cg_policy_run_deferred();
  cg_priming_refresh_served(false);
  cg_serving_capture_over();
}

/* Whether the driver may still hold a capture on the stream after an end
 * that returned r: the end succeeded or was refused for a capture reason.
 * After any other error (an invalid or destroyed handle) the stream is not
 * asked about. */
static bool worth_asking(CUresult r) {
  return r == CUDA_SUCCESS || r == CUDA_ERROR_ILLEGAL_STATE ||
         (r >= CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r <= CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
}

CUresult cg_capture_end_leave(CUstream s, bool ptsz, CUresult r, CUgraph *graph) {
  uint64_t key = cg_stream_key(s, ptsz);
  /* The model follows the driver, not the end's result: an end from the
   * wrong thread (908) or with a NULL graph pointer ends the capture too,
   * and a refused end may leave it open. Asked with the gate still held
   * shared (no destroy of the stream can run), capture-safe. */
  CUstreamCaptureStatus still = CU_STREAM_CAPTURE_STATUS_NONE;
  uint64_t still_id = 0;
  /* An end that returned a graph ended its capture: nothing to ask. */
  bool ended = r == CUDA_SUCCESS && graph && *graph;
  if (!ended && worth_asking(r) && cg_captures_has(key) && !cg_captures_driver_state(s, ptsz, &still, &still_id))
    still = CU_STREAM_CAPTURE_STATUS_NONE; /* cannot say: over, as the end said */
  if (r != CUDA_SUCCESS) {
    /* A call refused on a wrapper's fast path is attributed before it
     * leaves the breakers' fence; one on the slow path before it leaves
     * the watched count; a refused one that may have come before the
     * offender known is waited for too (cg_captures_await_offender). */
    if (cg_captures_lacks_offender(key))
      cg_fence_wait(CG_FENCE_BREAKERS, true, 20000000ull);
    cg_captures_await_offender(key);
  }
  cg_capture closed;
  bool emulated_break = false;
  if (!cg_captures_end_leave(key, still, still_id, &r, &closed, &emulated_break))
    return r;
  if (emulated_break && graph && *graph) {
    if (cg_drv.GraphDestroy)
      cg_drv.GraphDestroy(*graph);
    *graph = NULL;
  }
  /* An end refused with 904 or 908 names its own cause (forks.c) when no
   * call broke the capture before. */
  bool with_graph = r == CUDA_SUCCESS && graph && *graph;
  if (with_graph)
    cg_stale_captured(*graph, closed.user, closed.id); /* CAPGUARD_STALE: where the graph's capture began */
  cg_break *end_cause = cg_end_offender(closed.id, r);
  if (!closed.broken_by)
    closed.broken_by = end_cause;
  else
    free(end_cause);
  /* the hang watch: where it began, for its execs' launches */
  capture_over(&closed, true, r, with_graph && __builtin_expect(cg_hang_s != 0, 0) ? *graph : NULL);
  cg_fleet_after_capture();
  return r;
}

CUresult cg_capture_stream_destroy(cg_entry_point ep, CUstream s, CUresult (*invoke)(CUstream)) {
  cg_begin_site *here = cg_begin_site_take(NULL, NULL); /* before the gate: names the destroy if it ends a capture */
  cg_gate_lock();
  cg_streams_destroy_lock();
  CUresult r = invoke(s);
  cg_capture closed;
  bool over = r == CUDA_SUCCESS && cg_captures_stream_destroyed(cg_stream_key(s, false), &closed);
  cg_streams_unlock();
  cg_gate_unlock();
  if (over) {
    if (!closed.broken_by) { /* the destroy ended it: its first offender */
      cg_break *b = malloc(sizeof *b);
      if (b)
        *b = cg_break_of(cg_ep_name(ep), CG_EV_STREAM_DESTROY, CG_VERDICT_ALLOWED, r, here);
      closed.broken_by = b;
    }
    capture_over(&closed, false, r, NULL);
  }
  free(here);
  return r;
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
  cg_captures_watched_enter(); /* a capture it breaks is its break, not an unwatched call's */
  CUresult r = l->invoke(l);
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && e->n_prohibitors) { /* the driver invalidated them: so does the model */
    cg_captures_refusal_returned();
    cg_captures_break_prohibitors(e, CG_VERDICT_REFUSED, r, where);
  }
  cg_captures_watched_leave();
  cg_gate_unlock();
  return r;
}

/* A load that went straight to the driver (nothing captured when its
 * wrapper looked) and was refused: a capture began on another thread in
 * between. The wrapper's fast path stays one atomic load; the rare refusal
 * is reported after the fact, naming the capture that now prohibits the
 * thread. */
void cg_guard_refused_unseen(cg_entry_point ep) {
  cg_event e = {.kind = CG_EV_MODULE_LOAD, .call = cg_ep_name(ep)};
  cg_begin_site site;
  /* Only named, not marked invalid: the capture the driver saw may have
   * ended since, and marking a newer one would make capguard fail a capture
   * the driver kept (the driver's own end reports the one it broke). */
  cg_gate_lock();
  e.n_prohibitors = cg_captures_prohibitor(&e.capture, &site);
  cg_gate_unlock();
  cg_report_refusal_and_free(&e, NULL, &site, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "a refused call's report");
}

/* A load's options in canonical form, and the words its event carries. */
typedef struct {
  cg_load_opts opts;
  char text[512];     /* its options, for the log */
  char foreign[96];   /* the option capguard cannot reproduce */
  char differ[256];   /* how they differ from the recorded ones */
} load_options_said;

/* The load's key (its options), or NULL when capguard cannot reproduce
 * them: then the event names the option. */
static cg_load_key *load_key(const cg_load *l, cg_event *e, load_options_said *said, cg_load_key *key) {
  said->text[0] = said->foreign[0] = said->differ[0] = 0;
  cg_opts_check c = cg_load_opts_canon(&l->opts, &said->opts);
  *key = (cg_load_key){&said->opts, &l->opts};
  if (!l->with_options)
    return key;
  cg_load_opts_format(&said->opts, said->text, sizeof said->text);
  e->load_options = said->text;
  if (c.verdict == CG_OPTS_SERVABLE)
    return key;
  char tmp[32];
  snprintf(said->foreign, sizeof said->foreign, "%s%s", cg_load_opt_name(c.why_scope, c.why_key, tmp, sizeof tmp),
           c.verdict == CG_OPTS_MALFORMED ? " (given twice, or too many options)" : "");
  e->options_foreign = said->foreign;
  return NULL;
}

CUresult cg_guard_load(const cg_load *l) {
  /* Cheap check first: loads while another thread's capture does not
   * prohibit this one need no inspection. */
  cg_gate_lock();
  if (!cg_captures_prohibitor_count()) {
    cg_event none = {.kind = CG_EV_MODULE_LOAD, .call = cg_ep_name(l->ep)};
    CUresult r = load_and_ungate(l, &none, NULL);
    if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      cg_report_refusal_and_free(&none, NULL, NULL, r, "a refused load's report");
    return r;
  }
  cg_gate_unlock();

  /* Without room for the event, the load goes to the driver as it would
   * without capguard. Where the call was made is taken now, before the
   * gate (a backtrace may take the loader's lock): it names the call if it
   * breaks the capture. One walk of the stack serves it and the report. */
  cg_report_scratch *s = cg_report_room("a load's report");
  if (s)
    cg_report_take_stack(s);
  cg_begin_site *here = s ? cg_report_site(s) : NULL;
  size_t file_size = 0;
  void *file = s && l->path ? cg_read_file(l->path, CG_IMAGE_MAX_BYTES, &file_size) : NULL;
  const void *img = file ? file : l->image;
  /* An in-memory image has no length: inspected with CG_IMAGE_MAX_BYTES,
   * so that every byte is probed readable before it is read. */
  bool malformed = s && img && cg_load_image_inspect(img, file ? file_size : CG_IMAGE_MAX_BYTES, &s->image, true) != 0;

  /* Inspection happened outside the gate; now decide and call under it. */
  cg_gate_lock();
  cg_event e = {.kind = CG_EV_MODULE_LOAD, .call = cg_ep_name(l->ep), .driver_result = -1,
                .with_options = l->with_options};
  load_options_said said;
  cg_load_key key_, *key = load_key(l, &e, &said, &key_);
  cg_begin_site site;
  e.n_prohibitors = cg_captures_prohibitor(&e.capture, &site);
  if (e.n_prohibitors)
    cg_captures_check_driver_state_gated(&e.capture);
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
  if (!malformed && cg_policy_load(l, e.image, key, said.differ, sizeof said.differ, &r, &v)) {
    e.verdict = v;
    if (v == CG_VERDICT_RESCUED || v == CG_VERDICT_FAILED)
      e.driver_result = (int)r;
    if (v == CG_VERDICT_EMULATED)
      cg_captures_break_prohibitors(&e, v, r, here);
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
    cg_priming_loaded(*l->out, e.image, l->is_library, &said.opts);
  else if (r != CUDA_SUCCESS && e.image && key)
    cg_priming_not_loaded(e.image, l->is_library, &said.opts);
  /* Recorded with its options, so that the next run preloads it with them;
   * a load whose options capguard cannot reproduce is never served, and
   * recording it would only make the next run preload a copy nothing takes. */
  if (key)
    cg_priming_record(e.image, l->is_library, &said.opts, e.verdict);
  if (said.differ[0])
    e.options_differ = said.differ;
  cg_report_and_free(&e, s, &site, NULL);
  free(here);
  free(file);
  return r;
}

/* Fork: the child is a process of its own, with nothing counted yet. */
static bool forked_child;
void cg_guard_atfork_child(void) {
  forked_child = true;
  cg_serving_atfork_child();
  cg_report_atfork_child();
  cg_fleet_atfork_child();
}

/* Whether a summary has anything to say: a forked child that never captured,
 * was never reported on and loaded nothing of the priming file (a worker of a
 * pool, a helper that execs nothing) says nothing at all. Its parent, which
 * used the driver, speaks for the run: a hundred forks printed a hundred bare
 * summaries, and the last one's record became the newest run in the log. */
static bool worth_saying(const cg_summary *s) {
  if (!forked_child || s->captures_begun || s->captures_open || s->primed_loaded || s->recorded)
    return true;
  for (int k = 0; k < CG_EV_KIND_COUNT; k++)
    if (s->events[k])
      return true;
  return false;
}

void cg_guard_exit(void) {
  cg_summary sum = {.pid = (uint64_t)getpid()};
  /* Nothing here blocks on a lock: exit() may come from a signal handler
   * that interrupted this thread inside capguard (locks.h). */
  cg_exit_begin();
  cg_captures_counts_at_exit(&sum.captures_begun, &sum.captures_broken);
  /* Captures still open get their records before the summary counts them. */
  sum.captures_open = cg_captures_write_open_at_exit();
  cg_report_counts(sum.events, sum.verdicts);
  cg_priming_refresh_served(true);
  cg_priming_summary(&sum);
  cg_serving_summary(&sum, true);
  cg_policy_at_exit();
  if (cg_hang_s) /* without the watcher's thread: a count of the table, no lock */
    sum.collective_execs = cg_hang_collective_execs(NULL);
  char began[CG_SLOWEST_CAPTURES][CG_BEGAN_TEXT];
  cg_fleet_summary(&sum, cg_output_wants_capture(false) ? began : NULL); /* symbolized for a log only */
  if (worth_saying(&sum)) {
    cg_output_summary(&sum);
    cg_fleet_metrics_at_exit(&sum);
  }
}
