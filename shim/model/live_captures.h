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
} cg_capture_activity;
extern cg_capture_activity cg_activity;
static inline bool cg_nothing_captures(void) { return __atomic_load_n(&cg_activity.both, __ATOMIC_ACQUIRE) == 0; }

uint64_t cg_self_tid(void);
uint64_t cg_self_pid(void);
cg_capture_mode cg_self_mode(void);
void cg_set_self_mode(cg_capture_mode mode);

/* Streams as the model keys them: the per-thread default stream is a
 * different stream on every thread. */
uint64_t cg_stream_key(CUstream s, bool ptsz);

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
} cg_begin_site;
/* The calling thread's site, on the heap (owned by the capture once begun);
 * NULL when out of memory. ra and ra_slot: the wrapper's return address and
 * where it is stored (cg_native_site), or NULL for a full backtrace. Take it
 * before the gate: the first backtrace may take the loader's lock. */
cg_begin_site *cg_begin_site_take(void *ra, void *ra_slot);
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
void cg_gate_lock(void);
void cg_gate_unlock(void);
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
                             uint64_t driver_id, cg_capture_mode mode, bool into_graph, bool nonblocking);
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

/* ---- calls that break captures on every driver (breakers.c) */

/* Which captures a call breaks, by the rule its entry point follows
 * (capture-semantics.md, both matrices). */
typedef enum {
  CG_RULE_PROHIBITED, /* where a capture prohibits the calling thread (allocations, frees, ...) */
  CG_RULE_ANY,        /* while any capture of the context is open, every mode, every thread
                         (cuCtxSynchronize; target: the context, 0 the current one) */
  CG_RULE_STREAM,     /* the call's stream captures: every mode; else as PROHIBITED */
  CG_RULE_EVENT,      /* the call's event was last recorded in a still-open capture: 907 in
                         every mode, from every thread; else as PROHIBITED */
  /* Third matrix: no prohibited-thread fallback (stream_work_wrappers.c). */
  CG_RULE_LEGACY,     /* work on the legacy stream (target; 0 for the synchronous copies):
                         906 while a blocking stream of the context captures, every mode,
                         every thread; run outside the graph while only non-blocking ones do */
  CG_RULE_WAIT_EVENT, /* the call's stream captures and waits on an event (aux) not recorded
                         into that capture: 905 if it was recorded before the capture */
  CG_RULE_CAPTURING,  /* the call's stream captures (cuGraphLaunch): 900 */
  CG_RULE_COPY_ASYNC, /* an asynchronous copy: as CG_RULE_LEGACY on the legacy stream; into a
                         capture with a host side in pageable memory (aux: that address, from
                         cg_captures_pageable; 0: none) it is captured, and each replay
                         reads or writes that memory as it is then */
} cg_rule;

/* The first of a copy's host-side addresses (a, then b; NULL: none) that is
 * pageable host memory, or 0. Asks the driver (cuPointerGetAttribute, a
 * query allowed mid-capture): never call it with the gate held. */
uint64_t cg_captures_pageable(const void *a, const void *b);

/* How a call met the captures: which rule applied, the first (oldest)
 * capture it breaks, copied, where that capture began, and how many it
 * breaks. */
typedef enum {
  CG_HIT_NONE,
  CG_HIT_PROHIBITED,
  CG_HIT_ANY,
  CG_HIT_STREAM,
  CG_HIT_EVENT,
  CG_HIT_LEGACY, /* the blocking captures of the context (906); first: the oldest */
  CG_HIT_ESCAPE, /* only non-blocking captures, one begun by the calling thread (first) */
  CG_HIT_PAGEABLE, /* a copy from pageable memory into the capture first */
} cg_hit_class;
typedef struct {
  cg_hit_class cls;
  cg_capture first;
  cg_begin_site site;
  size_t n;
  uint64_t context; /* CG_HIT_ANY: the context synchronised */
  /* CG_RULE_WAIT_EVENT: the open capture the event was recorded into (0:
   * none), and whether the waiting stream captures (else: a fork into it) */
  uint64_t event_capture;
  bool stream_captures;
} cg_hit;

/* Which captures a call on target (a CUstream, with ptsz, for STREAM; a
 * CUevent for EVENT) would break now; counts the event in them. aux: a
 * second handle, for the rules that need one (CG_RULE_WAIT_EVENT: the event
 * waited on; CG_RULE_COPY_ASYNC: the copy's source), else 0. May ask the
 * driver which capture a stream belongs to (cuStreamGetCaptureInfo, allowed
 * during capture): never call it with the gate held. */
void cg_captures_judge_aux(cg_rule rule, uint64_t target, bool ptsz, uint64_t aux, cg_hit *hit);
/* Called again with the gate held: the same, without asking the driver (a
 * stream that is not where a capture began counts as not capturing). */
void cg_captures_judge_gated(cg_rule rule, uint64_t target, bool ptsz, cg_hit *hit);

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
/* The calling thread's break: the call, what came of it, now, and site
 * (where the call was made; NULL when it could not be taken). */
cg_break cg_break_of(const char *call, cg_event_kind kind, cg_verdict v, CUresult r, const cg_begin_site *site);
/* Marks the captures hit invalidated, and b the first offender of each that
 * had none and was active. emulated: capguard itself refused the call, so
 * the end must fail as the emulated driver's would. */
void cg_captures_break(const cg_hit *hit, const cg_break *b, bool emulated);
/* The driver refused e's call (or capguard did, emulating: v): the captures
 * that prohibited it (e->capture the first) are broken, this call, made at
 * where, their first offender; e's capture is now invalidated. */
void cg_captures_break_prohibitors(cg_event *e, cg_verdict v, CUresult r, const cg_begin_site *where);
/* Before a call that may break capture c: if the driver already holds c
 * invalid (a call capguard does not watch broke it), so does the model,
 * with no first offender, so that a later call capguard sees is never named
 * for a break it did not make. Asks the driver (cuStreamGetCaptureInfo)
 * about c's stream only while the model still holds c open, with the
 * streams lock held shared (_gated: the caller holds the gate exclusive),
 * so that the stream cannot be destroyed meanwhile. Never with the model's
 * lock held. */
void cg_captures_check_driver_state(const cg_capture *c);
/* A refusal the driver's log named (driver_log_callback.c), with no wrapper to say
 * which capture it met: marks b the first offender of the captures such a
 * refusal breaks (code 906: the blocking captures of the caller's context,
 * as the model knows them; otherwise the captures that prohibit the calling
 * thread), or, when the model has none of those, of the active captures the
 * calling thread began, else of every active capture. Never calls the
 * driver: it runs inside the driver's callback. */
void cg_captures_break_logged(int code, const cg_break *b);
/* A watched call that may break a capture is on its way to the driver, from
 * just before the driver's call until its breaks are marked: meanwhile a
 * capture the driver holds invalid is not taken for one broken by a call
 * capguard does not watch (it may be this call's, not marked yet). */
void cg_captures_watched_enter(void);
void cg_captures_watched_leave(void);
/* The same for a call that already returned from the driver (a wrapper's
 * fast path): when it was made is unknown. */
void cg_captures_watched_enter_late(void);
/* The watched call of this thread was refused: counted until it leaves
 * (an end that failed with no first offender waits for such refusals, up
 * to 1 s, since their marks come soon). _in_driver: said by the driver's
 * log callback, inside the call (code: what the driver returns), which
 * also takes the call's in_driver tick; _returned: by the caller, after it. */
void cg_captures_refusal_in_driver(int code);
void cg_captures_refusal_returned(void);
/* Fork: the child's watched and refused calls are its own thread's only. */
void cg_captures_watched_atfork_child(void);
/* Before the model closes a capture whose end failed with no first offender
 * known: waits while watched calls are on their way (at most 20 ms: one may
 * be a synchronisation the driver let through, blocking), or refused ones
 * are being attributed (at most 1 s), since the driver's break may be one
 * of theirs, not marked yet. */
void cg_captures_await_offender(uint64_t stream_key);
/* Whether the model holds a capture on the stream with no first offender. */
bool cg_captures_lacks_offender(uint64_t stream_key);
void cg_captures_check_driver_state_gated(const cg_capture *c);
/* The driver refused a watched call (b, from cg_break_of inside the
 * watched region: its ticks say when it met the driver). Once every begin
 * that may have come before it is in the model, the captures it may have
 * broken by its rule (those of judged, as judged before the call, and of
 * the rule now) are sorted by the ticks of their begins and ends: a capture
 * that was surely open when the driver refused the call gets it as first
 * offender (replacing one surely made later); one whose begin or end raced
 * the call, and that the driver does not hold active, may have been broken
 * by it (kept as the first offender if no call surely broke it). Takes the
 * streams lock shared and asks the driver; never with the gate or the
 * model's lock held. now_out (may be NULL): the rule's hit now, counted. */
void cg_captures_attribute(const cg_hit *judged, cg_rule rule, uint64_t target, bool ptsz, const cg_break *b,
                           cg_hit *now_out);
/* A repeat of a reported call, counted against the hit's first capture. */
void cg_captures_count_repeat(const cg_hit *hit);

/* An event recorded on stream (cuEventRecord*), in two halves around the
 * driver's record. _begin, before it: if the stream belongs to an open
 * capture (where it began, or joined: then the driver is asked), the event
 * is marked in the model as recorded into it, and in guard mode every event
 * query in flight is waited for (query_fence.h), so that no query of the
 * event reaches the driver once the driver holds it captured. _end, after
 * it: a record outside any capture makes the event the driver's again; a
 * refused record is undone. Never with the gate held. */
typedef struct {
  uint64_t event;
  bool marked, was_tracked;
} cg_record_mark;
void cg_captures_event_record_begin(uint64_t event, CUstream s, bool ptsz, cg_record_mark *mk);
void cg_captures_event_record_end(const cg_record_mark *mk, CUresult driver_result);
/* An event destroyed (cuEventDestroy*): forgotten, so that a new event the
 * driver hands out under the same handle is the driver's to answer. */
void cg_captures_event_destroyed(uint64_t event);

/* What the driver says of the capture on s (cuStreamGetCaptureInfo,
 * capture-safe): false when it cannot say. Only for a stream the caller
 * knows is not destroyed. */
bool cg_captures_driver_state(CUstream s, bool ptsz, CUstreamCaptureStatus *st, uint64_t *id);

/* The driver's id for the capture on s, 0 when it does not capture (or
 * cannot say). */
uint64_t cg_captures_driver_id(CUstream s, bool ptsz);
/* The same, asked by a begin the driver accepted, before _leave: whether
 * the driver still held the capture active then is kept with it (no
 * refusal made before that broke it). */
uint64_t cg_captures_begun_driver_id(CUstream s, bool ptsz);

/* For the exit summary. */
uint64_t cg_captures_begun_total(void);
uint64_t cg_captures_broken(void);

/* Start-up and fork (init.c). */
void cg_captures_init(void);
void cg_captures_atfork_prepare(void);
void cg_captures_atfork_parent(void);
void cg_captures_atfork_child(void);

#endif
