/* The capture bookkeeping: capguard's model of the captures the driver has
 * open, the capture gate that keeps the two the same, and each thread's id
 * and capture-interaction mode. guard.c, policy.c and priming.c ask it; it
 * asks none of them (no call loops between files: tests/shim/check_calls.py). */
#ifndef CAPGUARD_LIVE_CAPTURES_H
#define CAPGUARD_LIVE_CAPTURES_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/capture_model.h"
#include "capguard/event.h"

/* Open captures in this process, and capture begins the driver may be
 * answering right now: the fast path's one atomic load, of both at once. A
 * begin counts from before the driver sees it, so a call that reads both as
 * zero cannot meet a capture the driver has and capguard has not. */
typedef union {
  struct {
    unsigned open, begins_in_flight;
  } n;
  uint64_t both;
  char line_[64]; /* a cache line of its own (live_captures.c) */
} cg_capture_activity;
extern cg_capture_activity cg_activity;
static inline bool cg_nothing_captures(void) { return __atomic_load_n(&cg_activity.both, __ATOMIC_ACQUIRE) == 0; }

/* The calling thread's id, asked of the kernel once a thread (inline: a
 * capture asks for it about five times). */
extern __thread uint64_t cg_self_tid_kept __attribute__((tls_model("initial-exec")));
uint64_t cg_self_tid_ask(void);
static inline uint64_t cg_self_tid(void) {
  uint64_t t = cg_self_tid_kept;
  return __builtin_expect(t != 0, 1) ? t : cg_self_tid_ask();
}
uint64_t cg_self_pid(void);
cg_capture_mode cg_self_mode(void);
void cg_set_self_mode(cg_capture_mode mode);

/* Streams as the model keys them: the per-thread default stream is a
 * different stream on every thread. */
uint64_t cg_stream_key_of_self(void); /* this thread's per-thread default stream */
static inline uint64_t cg_stream_key(CUstream s, bool ptsz) {
  if (__builtin_expect(s == CU_STREAM_PER_THREAD || (ptsz && s == NULL), 0))
    return cg_stream_key_of_self();
  return (uint64_t)(uintptr_t)s;
}
/* Whether a key is a thread's per-thread default stream (cg_stream_key sets
 * its two low bits, which no stream handle has): no handle to ask the driver
 * about. */
static inline bool cg_stream_key_per_thread(uint64_t key) { return (key & 3) == 3; }

/* Where a capture began: the raw return addresses, symbolized only if
 * someone asks (an event or the capture's log record), so a begin costs a
 * short unwind and no formatting. */
#define CG_BEGIN_SITE_FRAMES 12 /* enough to climb out of cudart */
#define CG_SITE_MAX_FRAMES 24  /* from inside the driver's log callback: the driver's own frames first */
typedef struct {
  void *frames[CG_SITE_MAX_FRAMES];
  int n;
  /* In a CPython process, the innermost Python frame outside torch's and
   * Triton's own code ("model_runner.py:1234 in capture"), "" otherwise:
   * Python frames are gone once the begin returns, so they are read now. */
  char python[256];
  /* The hang watch's ring of captured graphs (decide/hang/hang_launches.c):
   * the graph its capture ended with and the capture's id, set as the ring
   * takes the site. */
  uint64_t graph, capture_id;
} cg_begin_site;
/* The calling thread's site, on the heap (owned by the capture once begun);
 * NULL when out of memory. ra and ra_slot: the wrapper's return address and
 * where it is stored (cg_native_site), or NULL for a full backtrace. Take it
 * before the gate: the first backtrace may take the loader's lock. */
cg_begin_site *cg_begin_site_take(void *ra, void *ra_slot);
/* Gives a site back (free, or kept as the next begin's). */
void cg_begin_site_free(cg_begin_site *site);
/* The same, depth frames deep (at most CG_SITE_MAX_FRAMES), by a full backtrace. */
cg_begin_site *cg_site_take(int depth);
/* Symbolized: "PYTHON (NATIVE)", or the native frame alone ("" when unknown). Takes the loader's lock (dladdr): never with
 * the gate held. */
void cg_begin_site_text(const cg_begin_site *b, char *buf, size_t cap);

/* The capture gate. Capture begins and ends hold it shared from before the
 * driver's call until the model has the result; every call whose outcome
 * depends on which captures are open holds it exclusive from the check until
 * the driver has answered. No capture begins or ends while it is held
 * exclusive. */
#include "capture_gate.h" /* cg_gate_lock, cg_gate_unlock */
/* For a rare call (a load, an unload) whose wrapper saw nothing capturing:
 * takes the gate exclusive and returns true if nothing captures there
 * either (the caller makes the driver's call, then cg_gate_unlock());
 * false, with the gate released, if something does. A capture another
 * thread begins between the wrapper's look and the driver's call would
 * otherwise meet the call unseen. */
bool cg_gate_lock_if_idle(void);
/* Asking the driver about a stream taken from the model: shared (_ask), and
 * exclusive around the driver's destroy of a stream the model may hold a
 * capture on (_destroy): capguard never asks about a destroyed stream. */
void cg_streams_ask_lock(void);
void cg_streams_destroy_lock(void);
void cg_streams_unlock(void);

/* A begin: _enter (gate shared, the begin counted in flight) before the
 * driver's call, _leave after it: on success the model learns of the
 * capture (with the driver's id for it, 0 unknown) and owns site; the gate
 * is released. */
void cg_captures_begin_enter(void);
void cg_captures_begin_leave(cg_begin_site *site, CUresult driver_result, uint64_t stream_key,
                             uint64_t driver_id, cg_capture_mode mode, bool into_graph, bool nonblocking,
                             uint64_t ctx);
/* An end: _enter (gate shared) before the driver's call, _leave after it,
 * with what the driver says of the stream after the end (driver_still:
 * CU_STREAM_CAPTURE_STATUS_NONE when it no longer captures, or cannot say;
 * still_id the capture it holds). The model follows the driver: a capture
 * the driver still holds after a refused end stays open (false is
 * returned); otherwise it is closed whatever the end returned (908 from
 * another thread, or a NULL graph pointer, end it too). Returns false when
 * the model had no capture on the stream, or keeps it. Otherwise closed is
 * the capture as it ended (closed->user its begin site, now the caller's),
 * and *result is what the caller gets: an emulated invalidation turns
 * success into CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (*emulated_break).
 * The gate is released either way. */
/* An end's _enter: the stream's capture (by its key) is marked as ending,
 * at this tick of the shim's clock, before the driver sees the end. */
void cg_captures_end_enter(uint64_t stream_key);
bool cg_captures_end_leave(uint64_t stream_key, CUstreamCaptureStatus driver_still, uint64_t still_id,
                           CUresult *result, cg_capture *closed, bool *emulated_break);
/* Whether the model holds a capture open on the stream. */
bool cg_captures_has(uint64_t stream_key);
/* Where the capture open on the stream began, copied to *out under the
 * model's lock (the hang watcher: a begin copies nothing for it); false
 * when none is open or its site is unknown. */
bool cg_captures_site_of(uint64_t stream_key, cg_begin_site *out);
/* The open captures, oldest first, for the hang watch's look (its own
 * thread, a few times a second at most): each one's key, id, thread and
 * CLOCK_MONOTONIC begin (0: unknown); up to cap written, how many returned.
 * A capture pays nothing for the watch: its begin and end mark nothing. */
typedef struct {
  uint64_t key, id, tid, begin_mono_ns;
} cg_open_capture;
size_t cg_captures_open_now(cg_open_capture *out, size_t cap);

/* The shim's clock: a process-wide counter, one step per call, ordering
 * capguard's marks around driver calls made on different threads (a begin
 * that returned before a refused call was made was open when the driver
 * refused it). */
uint64_t cg_captures_tick(void);
/* Waits (at most 1 s) until every begin that was on its way to the driver
 * before tick is in the model. Never with the gate held. */
void cg_captures_await_begins_before(uint64_t tick);

/* A stream destroyed (cuStreamDestroy*) while it may capture: the caller
 * holds the gate exclusive around the driver's destroy, so that capguard
 * asks the driver nothing about that stream meanwhile or after (the real
 * driver segfaults when asked about a destroyed stream). On success the
 * capture on the stream, if any, is over: copied to *closed and dropped
 * from the model (true). */
bool cg_captures_stream_destroyed(uint64_t stream_key, cg_capture *closed);

/* How many open captures prohibit the calling thread. */
size_t cg_captures_prohibitor_count(void);
/* The same, with the oldest one copied to *first and where it began to
 * *site; counts the event in the model. */
size_t cg_captures_prohibitor(cg_capture *first, cg_begin_site *site);

/* True when no open capture prohibits the calling thread. */
bool cg_captures_self_unprohibited(void);

/* An open capture as the model names it: its stream and its sequence number
 * (a stream's next capture has another id). */
typedef struct {
  uint64_t stream, id;
} cg_capture_ref;
/* The open captures that prohibit the calling thread: up to cap written to
 * out, the total returned. */
size_t cg_captures_prohibitor_refs(cg_capture_ref *out, size_t cap);
/* True when none of the n captures is still open. */
bool cg_captures_refs_closed(const cg_capture_ref *refs, size_t n);

/* The first call capguard saw break a capture, and where it was made:
 * who.python and who.where stay NULL until the capture's record symbolizes
 * site (guard.c). */
typedef struct {
  cg_offender who;
  cg_begin_site site;
  /* When the call met the driver, on the shim's clock (0: unknown): made
   * after tick0, returned before tick1; in_driver, taken inside the call by
   * the driver's log callback (drivers 12.9 and later), orders refusals as
   * the driver made them. Set by cg_break_of for a watched call. */
  uint64_t tick0, tick1, in_driver;
} cg_break;

/* Captures begun and broken so far (the metrics file, written while the
 * process runs; never at exit, which takes cg_captures_counts_at_exit). */
void cg_captures_counts(uint64_t *begun, uint64_t *broken);

/* For the exit summary: captures begun and broken; false (both 0, one line
 * said) when the model's lock could not be had before the exit's deadline
 * (locks.h). */
bool cg_captures_counts_at_exit(uint64_t *begun, uint64_t *broken);

/* Start-up and fork (init.c). */
void cg_captures_init(void);
void cg_captures_atfork_prepare(void);
void cg_captures_atfork_parent(void);
void cg_captures_atfork_child(void);

#endif
