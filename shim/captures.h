/* The capture bookkeeping: capguard's model of the captures the driver has
 * open, the capture gate that keeps the two the same, and each thread's id
 * and capture-interaction mode. guard.c, policy.c and priming.c ask it; it
 * asks none of them (no call loops between files: tests/shim/check_calls.sh). */
#ifndef CAPGUARD_CAPTURES_H
#define CAPGUARD_CAPTURES_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/capture_model.h"

/* Open captures in this process, and capture begins the driver may be
 * answering right now; the fast path's two atomic loads. A begin counts from
 * before the driver sees it, so a call that reads both as zero cannot meet a
 * capture the driver has and capguard has not. */
extern unsigned cg_open_captures;
extern unsigned cg_begins_in_flight;
static inline bool cg_nothing_captures(void) {
  return __atomic_load_n(&cg_begins_in_flight, __ATOMIC_ACQUIRE) == 0 &&
         __atomic_load_n(&cg_open_captures, __ATOMIC_ACQUIRE) == 0;
}

uint64_t cg_self_tid(void);
cg_capture_mode cg_self_mode(void);
void cg_set_self_mode(cg_capture_mode mode);

/* Streams as the model keys them: the per-thread default stream is a
 * different stream on every thread. */
uint64_t cg_stream_key(CUstream s, bool ptsz);

/* Where a capture began: the raw return addresses, symbolized only if
 * someone asks (an event or the capture's log record), so a begin costs a
 * short unwind and no formatting. */
#define CG_BEGIN_SITE_FRAMES 6 /* enough to climb out of cudart; each frame costs an unwind step */
typedef struct {
  void *frames[CG_BEGIN_SITE_FRAMES];
  int n;
  /* In a CPython process, the innermost Python frame outside torch's and
   * Triton's own code ("model_runner.py:1234 in capture"), "" otherwise:
   * Python frames are gone once the begin returns, so they are read now. */
  char python[256];
} cg_begin_site;
/* The calling thread's site, on the heap (owned by the capture once begun);
 * NULL when out of memory. Take it before the gate: the first backtrace may
 * take the loader's lock. */
cg_begin_site *cg_begin_site_take(void);
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

/* A begin: _enter (gate shared, the begin counted in flight) before the
 * driver's call, _leave after it: on success the model learns of the
 * capture and owns site; the gate is released. */
void cg_captures_begin_enter(void);
void cg_captures_begin_leave(cg_begin_site *site, CUresult driver_result, uint64_t stream_key,
                             cg_capture_mode mode, bool into_graph);
/* An end: _enter (gate shared) before the driver's call, _leave after it.
 * Returns false when the model had no capture on the stream. Otherwise
 * closed is the capture as it ended (closed->user its begin site, now the
 * caller's), and *result is what the caller gets: an emulated invalidation
 * turns success into CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (*emulated_break).
 * The gate is released either way. */
void cg_captures_end_enter(void);
bool cg_captures_end_leave(uint64_t stream_key, CUresult *result, cg_capture *closed, bool *emulated_break);

/* How many open captures prohibit the calling thread. */
size_t cg_captures_prohibitor_count(void);
/* The same, with the oldest one copied to *first and where it began to
 * *site; counts the event in the model. */
size_t cg_captures_prohibitor(cg_capture *first, cg_begin_site *site);
/* Marks every capture prohibiting the calling thread invalidated (the driver
 * refused a call in them, or capguard did, emulating). */
void cg_captures_invalidate_prohibitors(void);
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

/* For the exit summary. */
uint64_t cg_captures_begun_total(void);
uint64_t cg_captures_broken(void);

/* Start-up and fork (init.c). */
void cg_captures_init(void);
void cg_captures_atfork_prepare(void);
void cg_captures_atfork_parent(void);
void cg_captures_atfork_child(void);

#endif
