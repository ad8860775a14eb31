#include "live_captures.h"

#include "capguard/text_out.h"
#include "model_lock.h"
#include "capture_gate.h"

#include <execinfo.h>
#include <stdio.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capguard/clock.h"
#include "capguard/frame_filter.h"
#include "driver.h"
#include "output.h"
#include "query_fence.h"
#include "tick_slots.h"
#include "ending_slots.h"
#include "python_site.h"
#include "stack.h"
#include "warn.h"
#include "locks.h"
#include "shard_lock.h"
#include "thread_id.h"

/* What every capture writes, each on a cache line of its own (a struct so
 * aligned is as long as a line, so nothing else lands beside it): the shim's
 * clock shared a line with cg_activity, which every wrapper's fast path
 * reads, and the model's lock one with the gate, so that each tick and each
 * hand-off of one took from every other core the line it was reading. */
#define OWN_LINE __attribute__((aligned(64)))
cg_capture_activity cg_activity OWN_LINE;

/* The shim's clock (live_captures.h). */
static struct {
  uint64_t n;
} OWN_LINE ticks;
uint64_t cg_captures_tick(void) { return __atomic_add_fetch(&ticks.n, 1, __ATOMIC_SEQ_CST); }

/* Begins between their driver call and the model's update, each in a slot
 * holding the tick taken before its driver call (tick_slots.h). A begin
 * publishes its slot before the driver sees it, so a refusal that waits for
 * the slots ticked before it returned waits for every begin the driver may
 * have made before it. */
static cg_tick_slots begins;
static __thread int begin_slot __attribute__((tls_model("initial-exec")));  /* slot + 1; 0: unslotted */
static __thread uint64_t begin_tick0 __attribute__((tls_model("initial-exec")));
/* What cg_captures_begun_driver_id learnt (break_rules.c), for capture_begun. */
static __thread uint64_t begin_returned_tick __attribute__((tls_model("initial-exec")));
static __thread uint64_t begin_active_tick __attribute__((tls_model("initial-exec")));
static __thread uint64_t begin_invalid_tick __attribute__((tls_model("initial-exec")));

void cg_captures_note_begun_state(uint64_t returned, uint64_t active, uint64_t invalid) {
  begin_returned_tick = returned;
  begin_active_tick = active;
  begin_invalid_tick = invalid;
}

/* The capture gate (live_captures.h; capture_gate.c). So whenever capguard
 * decides, the model is what the driver sees: no capture can be begun (or
 * ended) in the driver and not yet (or no longer) in the model, and none can
 * be begun between capguard's check and the driver's call. Never held
 * across a report, a log write or the loader's lock. */

bool cg_gate_lock_if_idle(void) {
  cg_gate_lock();
  if (cg_nothing_captures())
    return true;
  cg_gate_unlock();
  return false;
}

/* Held shared while capguard asks the driver about a capture's stream that
 * it took from the model (not from the caller's arguments), exclusive by a
 * destroy of a stream the model holds a capture on: the real driver
 * segfaults when asked about a destroyed stream. Apart from the gate, so
 * that asking never queues behind a decision waiting for the gate. */
static pthread_rwlock_t streams = PTHREAD_RWLOCK_INITIALIZER;
void cg_streams_ask_lock(void) { cg_rdlock(&streams); }
void cg_streams_destroy_lock(void) { cg_wrlock(&streams); }
void cg_streams_unlock(void) { cg_rwunlock(&streams); }

/* The model's locks, one a shard of it (capture_model.h): a capture's begin
 * and end take their stream's shard's lock, for a short while, so threads
 * capturing on different streams wait for one another only when their
 * streams share a shard; a waiter spins a moment before it sleeps (shard_lock.h).
 * Every other question of the model takes them all, in index order (a
 * thread holding one shard's never takes another's). */
static struct {
  cg_shard_lock m;
} OWN_LINE model_locks[CG_MODEL_SHARDS] = {[0 ... CG_MODEL_SHARDS - 1] = {CG_SHARD_LOCK_INIT}};
static cg_model *model;
static uint64_t captures_broken; /* atomic: ends on different shards */

static void lock_all(void) {
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++)
    cg_shard_lock_take(&model_locks[i].m);
}
static void unlock_all(void) {
  for (unsigned i = CG_MODEL_SHARDS; i-- > 0;)
    cg_shard_lock_give(&model_locks[i].m);
}

/* The lock for a change to one stream's capture: its shard's, or every
 * shard's (returned as CG_MODEL_SHARDS) while the model tracks events
 * recorded into captures, since closing a capture forgets its events. Read
 * under the shard's lock: what adds an event holds every one. */
static unsigned lock_stream(uint64_t key) {
  unsigned i = cg_model_shard(key);
  cg_shard_lock_take(&model_locks[i].m);
  if (!model || !cg_model_tracked_events(model))
    return i;
  cg_shard_lock_give(&model_locks[i].m);
  lock_all();
  return CG_MODEL_SHARDS;
}
static void unlock_stream(unsigned held) {
  if (held == CG_MODEL_SHARDS)
    unlock_all();
  else
    cg_shard_lock_give(&model_locks[held].m);
}

/* For break_rules.c (model_lock.h): the whole model. */
cg_model *cg_captures_model_lock(void) {
  lock_all();
  return model;
}
cg_model *cg_captures_model_lock_at_exit(const char *what, bool *had) {
  unsigned i = 0;
  while (i < CG_MODEL_SHARDS && cg_shard_lock_at_exit(&model_locks[i].m, what))
    i++;
  *had = i == CG_MODEL_SHARDS;
  if (!*had)
    while (i-- > 0)
      cg_shard_lock_give(&model_locks[i].m);
  return *had ? model : NULL;
}
void cg_captures_model_unlock(void) { unlock_all(); }

/* initial-exec: a preloaded library's TLS is static; no allocation on first use. */
__thread uint64_t cg_self_tid_kept __attribute__((tls_model("initial-exec")));
static __thread int self_mode __attribute__((tls_model("initial-exec"))); /* 0 == CG_MODE_GLOBAL */

/* The process id, asked once (getpid is a system call; the fork handler
 * clears it in the child). */
static pid_t self_pid;
uint64_t cg_self_pid(void) {
  pid_t p = __atomic_load_n(&self_pid, __ATOMIC_RELAXED);
  if (!p) {
    p = getpid();
    __atomic_store_n(&self_pid, p, __ATOMIC_RELAXED);
  }
  return (uint64_t)p;
}

uint64_t cg_self_tid_ask(void) {
  if (!cg_self_tid_kept)
    cg_self_tid_kept = (uint64_t)cg_thread_id();
  return cg_self_tid_kept;
}
cg_capture_mode cg_self_mode(void) { return (cg_capture_mode)self_mode; }
void cg_set_self_mode(cg_capture_mode mode) { self_mode = (int)mode; }

uint64_t cg_stream_key_of_self(void) {
  return (cg_self_tid() << 2) | 3; /* no stream handle has its two low bits set */
}

/* A site is taken at every begin and given back at its end: spares are
 * kept (an atomic exchange each way) instead of a malloc and a free. One
 * spare a thread's share of SPARE_SITES, each on a line of its own: with a
 * single one, every thread capturing at once exchanged on the same line
 * twice a capture. At most SPARE_SITES kept, whatever the threads. */
enum { SPARE_SITES = 16 };
static struct {
  cg_begin_site *p;
} OWN_LINE spare_sites[SPARE_SITES];
void cg_begin_site_free(cg_begin_site *site) {
  cg_begin_site *none = NULL;
  if (site && !__atomic_compare_exchange_n(&spare_sites[cg_self_tid() % SPARE_SITES].p, &none, site, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    free(site);
}

cg_begin_site *cg_begin_site_take(void *ra, void *ra_slot) {
  cg_begin_site *site = __atomic_exchange_n(&spare_sites[cg_self_tid() % SPARE_SITES].p, NULL, __ATOMIC_ACQ_REL);
  if (!site)
    site = malloc(sizeof *site);
  if (site) {
    site->n = (int)cg_native_site(ra, ra_slot, site->frames, CG_BEGIN_SITE_FRAMES);
    cg_python_site(site->python, sizeof site->python);
  } else
    cg_warn_oom("where a capture began");
  return site;
}

cg_begin_site *cg_site_take(int depth) {
  cg_begin_site *site = malloc(sizeof *site);
  if (site) {
    site->n = backtrace(site->frames, depth < CG_SITE_MAX_FRAMES ? depth : CG_SITE_MAX_FRAMES);
    cg_python_site(site->python, sizeof site->python);
  } else
    cg_warn_oom("where a capture began");
  return site;
}

/* Symbolizes with dladdr, which takes the loader's lock: never call it with
 * a model lock held (a thread inside dlopen may be waiting for one in a
 * wrapper while holding the loader's lock). */
void cg_begin_site_text(const cg_begin_site *b, char *buf, size_t cap) {
  buf[0] = 0;
  if (!b)
    return;
  char native[384] = "";
  if (b->n > 0)
    cg_native_where_frames(b->frames, (size_t)b->n, native, sizeof native);
  /* "python (native)", or whichever there is; by hand: snprintf costs
   * more than the rest of a capture's record. */
  cg_out w = cg_out_init(buf, cap);
  cg_out_str(&w, b->python[0] ? b->python : native);
  if (b->python[0] && native[0]) {
    cg_out_str(&w, " (");
    cg_out_str(&w, native);
    cg_out_char(&w, ')');
  }
  cg_out_finish(&w);
}

void cg_captures_init(void) {
  if (!model)
    model = cg_model_new();
  if (!model)
    cg_warn_oom("the capture model");
}

void cg_captures_begin_enter(void) {
  __atomic_add_fetch(&cg_activity.n.begins_in_flight, 1, __ATOMIC_SEQ_CST);
  /* Every event query that looked before this begin (and saw nothing
   * capturing) leaves the driver before the driver sees the begin: none can
   * then meet this capture unseen (query_fence.h), in guard mode (no query
   * of an event recorded into it reaches the driver) as in report mode (no
   * refusal of such a query goes unreported). Waited
   * for before the gate: a query may want the gate shared, and a decision
   * queued for it exclusive would hold that query back. */
  cg_query_divert_and_wait();
  cg_gate_share();
  begin_tick0 = cg_captures_tick();
  begin_slot = cg_tick_slots_take(&begins, begin_tick0, cg_self_tid());
}

static bool begins_before(uint64_t tick) { return cg_tick_slots_before(&begins, tick); }

void cg_captures_await_begins_before(uint64_t tick) {
  uint64_t start = cg_monotonic_ns();
  for (unsigned spins = 0; begins_before(tick) && cg_monotonic_ns() - start < 1000000000ull; spins++) {
    if (spins < 64) {
      sched_yield();
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

/* A capture's end, as a wall-clock label: its begin's label plus the
 * monotonic time since, so that a step of the wall clock (NTP, an operator's
 * date) never makes a capture last an hour or less than nothing. With the
 * stream's lock held. */
static uint64_t end_label_of(const cg_capture *open) {
  if (!open || !open->begin_mono_ns)
    return cg_now_ns();
  uint64_t mono = cg_monotonic_ns();
  return open->begin_ns + (mono > open->begin_mono_ns ? mono - open->begin_mono_ns : 0);
}
static uint64_t end_label_ns(uint64_t key) { return end_label_of(cg_model_find(model, key)); }

/* ctx: the beginning thread's current context, asked once by the begin
 * (guard.c), which also hands it to priming. */
static int capture_begun(uint64_t key, uint64_t driver_id, cg_capture_mode mode, bool into_graph,
                          bool nonblocking, cg_begin_site *site, uint64_t ctx) {
  unsigned held = lock_stream(key);
  if (!model) {
    unlock_stream(held);
    free(site);
    return 0;
  }
  int opened = 0;
  cg_capture *c = cg_model_begin(model, key, ctx, mode, cg_self_tid(), into_graph,
                                 cg_now_ns(), site);
  if (!c) {
    /* The model still has a capture open on this stream, so it missed an
     * end: close the stale one and track the new one. */
    cg_capture stale;
    if (cg_model_end(model, key, false, end_label_ns(key), &stale) == 0) {
      opened--;
      cg_model_forget_events_of(model, stale.id);
      free(stale.user);
      free(stale.broken_by);
      free(stale.maybe_by);
    }
    c = cg_model_begin(model, key, ctx, mode, cg_self_tid(), into_graph, cg_now_ns(), site);
  }
  if (c) {
    opened++;
    c->begin_mono_ns = cg_monotonic_ns();
    c->driver_id = driver_id;
    c->nonblocking = nonblocking;
    c->begin_tick[0] = begin_tick0;
    c->begin_tick[1] = begin_returned_tick ? begin_returned_tick : cg_captures_tick(); /* after the driver's begin */
    c->active_tick = begin_active_tick;
    c->invalid_tick = begin_invalid_tick;
  } else
    free(site);
  unlock_stream(held);
  return opened;
}

/* The activity word's two counts as one number, open + in flight * 2^32
 * (open the low half: little-endian), so that a begin leaving the flight
 * and counting what it opened is one locked add: the word is one line that
 * every capturing thread writes, and it never reads 0 between the two. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "cg_capture_activity: open is the low half");
static void begin_counted(int opened) {
  uint64_t delta = (uint64_t)(int64_t)opened - ((uint64_t)1 << 32);
  __atomic_add_fetch(&cg_activity.both, delta, __ATOMIC_ACQ_REL);
}

void cg_captures_begin_leave(cg_begin_site *site, CUresult r, uint64_t key, uint64_t driver_id,
                             cg_capture_mode mode, bool into_graph, bool nonblocking, uint64_t ctx) {
  int opened = 0;
  if (r == CUDA_SUCCESS)
    opened = capture_begun(key, driver_id, mode, into_graph, nonblocking, site, ctx);
  else
    free(site);
  begin_returned_tick = begin_active_tick = begin_invalid_tick = 0;
  cg_tick_slots_give(&begins, begin_slot);
  begin_counted(opened);
  cg_gate_unshare();
}

/* Ends between their entry and the model's update (ending_slots.h). */
static cg_ending_slots ending;
static __thread int end_slot __attribute__((tls_model("initial-exec"))); /* slot + 1; 0: none */

void cg_captures_end_enter(uint64_t key) {
  cg_gate_share();
  end_slot = cg_ending_take(&ending, key, cg_captures_tick(), cg_self_tid());
  if (end_slot)
    return;
  /* No free slot: the capture is stamped in the model. */
  unsigned shard = cg_model_shard(key);
  cg_shard_lock_take(&model_locks[shard].m);
  cg_capture *c = model ? cg_model_find(model, key) : NULL;
  if (c && !c->end_tick)
    c->end_tick = cg_captures_tick();
  cg_shard_lock_give(&model_locks[shard].m);
}

uint64_t cg_captures_end_tick(const cg_capture *c) {
  uint64_t stamped = c->end_tick, in_flight = cg_ending_tick(&ending, c->stream, c->begin_tick[0]);
  return stamped && (!in_flight || stamped < in_flight) ? stamped : in_flight;
}

bool cg_captures_end_leave(uint64_t key, CUstreamCaptureStatus still, uint64_t still_id, CUresult *result,
                           cg_capture *closed, bool *emulated_break) {
  unsigned held = lock_stream(key);
  cg_capture *open = model ? cg_model_find(model, key) : NULL;
  bool same = open && (!still_id || !open->driver_id || still_id == open->driver_id);
  if (open && still != CU_STREAM_CAPTURE_STATUS_NONE && same) {
    /* The driver refused the end and still captures: so does the model. */
    if (still == CU_STREAM_CAPTURE_STATUS_INVALIDATED && open->status == CG_CAPTURE_ACTIVE)
      open->status = CG_CAPTURE_INVALIDATED;
    open->end_tick = 0; /* not ended: a later refusal met it open */
    open = NULL;
  }
  cg_ending_give(&ending, end_slot); /* the model has the end (or never had the capture) */
  end_slot = 0;
  if (!open) {
    unlock_stream(held);
    cg_gate_unshare();
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
  /* No call surely broke it: the one that may have is its first offender. */
  if (!open->broken_by && *result != CUDA_SUCCESS)
    open->broken_by = open->maybe_by;
  else
    free(open->maybe_by);
  open->maybe_by = NULL;
  cg_model_end(model, key, *result == CUDA_SUCCESS, end_label_of(open), closed);
  if (held == CG_MODEL_SHARDS) /* else no event is tracked (lock_stream) */
    cg_model_forget_events_of(model, id);
  if (*result != CUDA_SUCCESS)
    __atomic_add_fetch(&captures_broken, 1, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&cg_activity.n.open, 1, __ATOMIC_RELEASE);
  unlock_stream(held);
  cg_gate_unshare();
  return true;
}

bool cg_captures_has(uint64_t key) {
  unsigned shard = cg_model_shard(key);
  cg_shard_lock_take(&model_locks[shard].m);
  bool has = model && cg_model_find(model, key);
  cg_shard_lock_give(&model_locks[shard].m);
  return has;
}

bool cg_captures_site_of(uint64_t key, cg_begin_site *out) {
  unsigned shard = cg_model_shard(key);
  cg_shard_lock_take(&model_locks[shard].m);
  cg_capture *open = model ? cg_model_find(model, key) : NULL;
  const cg_begin_site *site = open ? open->user : NULL;
  if (site)
    *out = *site;
  cg_shard_lock_give(&model_locks[shard].m);
  return site != NULL;
}

size_t cg_captures_open_now(cg_open_capture *out, size_t cap) {
  cg_capture *all[64];
  if (cap > 64)
    cap = 64;
  lock_all();
  size_t n = model ? cg_model_open_captures(model, all, cap) : 0;
  for (size_t i = 0; i < n && i < cap; i++)
    out[i] = (cg_open_capture){all[i]->stream, all[i]->id, all[i]->tid, all[i]->begin_mono_ns};
  unlock_all();
  return n < cap ? n : cap;
}

bool cg_captures_stream_destroyed(uint64_t key, cg_capture *closed) {
  unsigned held = lock_stream(key);
  cg_capture *open = model ? cg_model_find(model, key) : NULL;
  if (open) {
    uint64_t id = open->id;
    free(open->maybe_by); /* the destroy ended it, if no call surely broke it before */
    open->maybe_by = NULL;
    cg_model_end(model, key, false, end_label_ns(key), closed); /* no graph: failed */
    cg_model_forget_events_of(model, id);
    __atomic_add_fetch(&captures_broken, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&cg_activity.n.open, 1, __ATOMIC_RELEASE);
  }
  unlock_stream(held);
  return open != NULL;
}

size_t cg_captures_prohibitor_count(void) {
  lock_all();
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), NULL, 0) : 0;
  unlock_all();
  return n;
}

bool cg_captures_self_unprohibited(void) { return cg_captures_prohibitor_count() == 0; }

size_t cg_captures_prohibitor(cg_capture *first, cg_begin_site *site) {
  cg_capture *p[1];
  site->n = 0;
  site->python[0] = '\0'; /* no prohibitor: no site, and no text of one */
  lock_all();
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), p, 1) : 0;
  if (n) {
    *first = *p[0];
    cg_model_count_event(model, cg_self_tid(), cg_self_mode());
    if (p[0]->user)
      *site = *(const cg_begin_site *)p[0]->user;
  }
  unlock_all();
  return n;
}


size_t cg_captures_prohibitor_refs(cg_capture_ref *out, size_t cap) {
  cg_capture *p[16];
  if (cap > 16)
    cap = 16;
  lock_all();
  size_t n = model ? cg_model_prohibitors(model, cg_self_tid(), cg_self_mode(), p, cap) : 0;
  for (size_t i = 0; i < n && i < cap; i++)
    out[i] = (cg_capture_ref){p[i]->stream, p[i]->id};
  unlock_all();
  return n;
}

bool cg_captures_refs_closed(const cg_capture_ref *refs, size_t n) {
  bool closed = true;
  lock_all();
  for (size_t i = 0; model && closed && i < n; i++) {
    cg_capture *c = cg_model_find(model, refs[i].stream);
    closed = !c || c->id != refs[i].id;
  }
  unlock_all();
  return closed;
}

void cg_captures_counts(uint64_t *begun, uint64_t *broken) {
  lock_all();
  *begun = model ? cg_model_begun_total(model) : 0;
  *broken = __atomic_load_n(&captures_broken, __ATOMIC_RELAXED);
  unlock_all();
}

bool cg_captures_counts_at_exit(uint64_t *begun, uint64_t *broken) {
  *begun = *broken = 0;
  bool had;
  cg_captures_model_lock_at_exit("the summary's capture counts", &had);
  if (!had)
    return false;
  *begun = model ? cg_model_begun_total(model) : 0;
  *broken = __atomic_load_n(&captures_broken, __ATOMIC_RELAXED);
  unlock_all();
  return true;
}

/* Fork: a child inherits the parent's memory but none of its other threads,
 * so the locks must not be held across fork and the child's model starts
 * empty (CUDA captures do not survive fork). */
void cg_captures_atfork_prepare(void) {
  cg_gate_atfork_prepare();
  cg_wrlock(&streams);
  lock_all();
}
void cg_captures_atfork_parent(void) {
  unlock_all();
  cg_rwunlock(&streams);
  cg_gate_atfork_parent();
}
void cg_captures_atfork_child(void) {
  cg_query_fence_atfork_child();
  for (unsigned i = 0; i < CG_MODEL_SHARDS; i++)
    model_locks[i].m = (cg_shard_lock)CG_SHARD_LOCK_INIT;
  cg_gate_atfork_child();
  streams = (pthread_rwlock_t)PTHREAD_RWLOCK_INITIALIZER;
  cg_activity.n.begins_in_flight = 0;
  /* The parent's captures are leaked in the child rather than freed: their
   * user pointers belong to the parent's bookkeeping. Small and one-off. */
  model = cg_model_new();
  __atomic_store_n(&cg_activity.n.open, 0, __ATOMIC_RELEASE);
  captures_broken = 0;
  cg_tick_slots_reset(&begins, false, 0, 0);
  cg_ending_reset(&ending);
  end_slot = 0;
  begin_slot = 0;
  cg_self_tid_kept = 0;
  self_pid = 0;
}
