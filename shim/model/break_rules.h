/* Which captures a call breaks, and marking them broken with their first
 * offender (break_rules.c): the rules of the calls that break captures on
 * every driver (asked by decide/guard/breakers.c and the wrappers), the watched
 * region and refusals that order a break against the captures' begins and
 * ends, and the events recorded into captures that the 907 rule needs. Part
 * of the capture bookkeeping: live_captures.h holds the model's captures and
 * the gate. */
#ifndef CAPGUARD_BREAK_RULES_H
#define CAPGUARD_BREAK_RULES_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/capture_model.h"
#include "capguard/event.h"
#include "live_captures.h"

/* Which captures a call breaks, by the rule its entry point follows
 * (driver-semantics.md, both matrices). */
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
/* The same, for a begin the driver accepted (key: its stream's), before
 * _leave; 0 without a driver call where nothing needs it now (the id is then
 * learnt when a stream that joined the capture needs it). Whether the
 * driver still held the capture active then is kept with it (no refusal
 * made before that broke it). */
uint64_t cg_captures_begun_driver_id(CUstream s, bool ptsz, uint64_t key);

#endif
