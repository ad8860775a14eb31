/* Capture-state model: which capture sequences are open, in which mode, begun by
 * which thread, and which of them prohibit a given thread from potentially
 * unsafe calls. Pure data and rules, no driver, no locking: the caller
 * serialises access, by shard (below). The rule is the CUDA documentation's (see
 * cuThreadExchangeStreamCaptureMode), checked against
 * docs/driver-semantics.md, in tests/unit. */
#ifndef CAPGUARD_CAPTURE_MODEL_H
#define CAPGUARD_CAPTURE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* cg_capture_mode (CUstreamCaptureMode's values) and cg_capture_status are
 * words of the log: their rows are in log_schema.h. */
#include "capguard/log_schema.h"

typedef struct {
  uint64_t id;      /* capguard's own sequence number, 1, 2, ... per model */
  uint64_t stream;  /* stream key (see cg_stream_key in the shim) */
  uint64_t context; /* CUcontext as an integer, 0 if unknown */
  uint64_t tid;     /* thread that began it */
  cg_capture_mode mode;
  cg_capture_status status;
  bool into_graph;  /* begun with cuStreamBeginCaptureToGraph */
  bool nonblocking; /* its stream was created CU_STREAM_NON_BLOCKING (false: blocking or unknown):
                       legacy-stream work breaks only blocking streams' captures */
  uint64_t begin_ns, end_ns; /* wall-clock labels: end_ns is begin_ns plus the monotonic time between */
  uint64_t begin_mono_ns;    /* CLOCK_MONOTONIC at the begin (0: unknown), for the durations */
  uint64_t events;  /* forbidden calls made while it prohibited a thread */
  uint64_t repeats; /* of those, counted and not reported again (same call, verdict and site) */
  uint64_t driver_id; /* the driver's id for the capture sequence (cuStreamGetCaptureInfo), 0 unknown */
  bool emulated;    /* invalidated by capguard itself, emulating an older driver's refusal */
  void *user;       /* caller's attachment (e.g. where it began); never freed by the model */
  void *broken_by;  /* caller's attachment: the first call that broke it; never freed by the model */
  /* For telling which captures a refusal met, when begins and ends race it
   * (the shim's clock, cg_captures_tick): taken before the driver's begin,
   * after it returned, and before the driver's end (0: no end under way). */
  uint64_t begin_tick[2], end_tick;
  /* Asked as it began (0: unknown): the driver held it active after
   * active_tick, or already invalid before invalid_tick. */
  uint64_t active_tick, invalid_tick;
  void *maybe_by;        /* caller's attachment: a refused call that may have broken it (the first
                            offender if no call surely did); never freed by the model */
  bool unwatched_break;  /* the driver held it invalid while no call capguard watches was on its way */
} cg_capture;

typedef struct cg_model cg_model;

/* The open captures are kept in shards by stream, so that threads capturing
 * on different streams need not wait for one another. The calls on one
 * stream (cg_model_begin, cg_model_end, cg_model_find) read and write only
 * that stream's shard (cg_model_shard) and the model's counters, which they
 * change atomically: the caller serialises them per shard, one lock a shard.
 * Every other call reads or writes every shard, or the events: the caller
 * holds every shard's lock for them. A single-threaded caller needs none. */
#define CG_MODEL_SHARD_BITS 5
#define CG_MODEL_SHARDS (1u << CG_MODEL_SHARD_BITS)
/* The high bits of a multiply: the low ones of a handle (aligned) agree. */
static inline unsigned cg_model_shard(uint64_t stream) {
  return (unsigned)((stream * 0x9e3779b97f4a7c15ull) >> (64 - CG_MODEL_SHARD_BITS));
}

cg_model *cg_model_new(void); /* NULL on out of memory */
void cg_model_free(cg_model *m);

/* Record a begin the driver accepted. Returns the new capture, or NULL if the
 * stream already has an open capture in the model (the driver would have
 * refused) or memory ran out. */
cg_capture *cg_model_begin(cg_model *m, uint64_t stream, uint64_t context, cg_capture_mode mode,
                           uint64_t tid, bool into_graph, uint64_t now_ns, void *user);

/* Close the capture on stream. driver_ok: the driver's end returned success.
 * Copies the closed capture to *out (status ENDED, or FAILED) and removes it.
 * Returns 0, or -1 if no capture was open on that stream. */
int cg_model_end(cg_model *m, uint64_t stream, bool driver_ok, uint64_t now_ns, cg_capture *out);

/* Open capture on stream, or NULL. */
cg_capture *cg_model_find(cg_model *m, uint64_t stream);
size_t cg_model_open_count(const cg_model *m);    /* any lock, or none: read atomically */
uint64_t cg_model_begun_total(const cg_model *m); /* captures ever begun; every shard's lock */

/* The rule: is a thread in thread_mode prohibited by capture c?
 *   relaxed thread: never;
 *   thread-local:   only by its own capture not begun in relaxed mode;
 *   global:         by its own non-relaxed capture, or by any other thread's global capture. */
bool cg_capture_prohibits(const cg_capture *c, uint64_t tid, cg_capture_mode thread_mode);

/* The open captures that prohibit tid in thread_mode, oldest first; writes up
 * to cap pointers and returns how many there are in all. */
size_t cg_model_prohibitors(cg_model *m, uint64_t tid, cg_capture_mode thread_mode,
                            cg_capture **out, size_t cap);

/* Count one forbidden call against every capture that prohibits tid (their
 * `events`). Returns how many captures were counted. */
size_t cg_model_count_event(cg_model *m, uint64_t tid, cg_capture_mode thread_mode);

/* Every open capture, oldest first (cuCtxSynchronize is refused while any
 * capture is open, whatever the modes); up to cap written, the total returned. */
size_t cg_model_open_captures(cg_model *m, cg_capture **out, size_t cap);
/* The open capture the driver knows by this id (cg_capture.driver_id), or NULL. */
cg_capture *cg_model_find_driver_id(cg_model *m, uint64_t driver_id);

/* Events recorded into captures. The driver answers a query or a wait on an
 * event last recorded in a still-capturing stream with 907 and invalidates
 * that capture, in every mode, from every thread (driver-semantics.md,
 * second matrix). into: the open capture the event was just recorded into,
 * or NULL when it was recorded outside any capture (forgotten). Bounded:
 * past CG_MODEL_MAX_EVENTS tracked events a new one is not tracked. */
void cg_model_event_recorded(cg_model *m, uint64_t event, const cg_capture *into);
/* The still-open capture the event was last recorded into, or NULL. */
cg_capture *cg_model_event_capture(cg_model *m, uint64_t event);
/* Forgets one event (destroyed; or a record into a capture the driver
 * refused). */
void cg_model_event_forget(cg_model *m, uint64_t event);
/* Whether the event is tracked at all (recorded into a capture, open or not). */
bool cg_model_event_tracked(const cg_model *m, uint64_t event);
/* Forgets the events recorded into the capture (it ended). */
void cg_model_forget_events_of(cg_model *m, uint64_t capture_id);
/* Under any one shard's lock: what changes the events holds every one. */
size_t cg_model_tracked_events(const cg_model *m);

#endif
