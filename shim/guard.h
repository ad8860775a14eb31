/* Capture tracking and what happens to a module load or unload made while a
 * capture prohibits the calling thread. The wrappers (capture_wrappers.c,
 * module_wrappers.c) call in here only when something captures; otherwise
 * they pass straight to the driver after one atomic load. */
#ifndef CAPGUARD_GUARD_H
#define CAPGUARD_GUARD_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "capguard/capture_model.h"
#include "capguard/event.h"
#include "entry_points.h"

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

/* A capture begin: _enter before the driver's call (priming runs here, the
 * begin site is taken, the gate is held shared), _leave after it with the
 * driver's result (the model learns of the capture, the gate is released). */
void *cg_capture_begin_enter(void);
void cg_capture_begin_leave(void *site, CUresult driver_result, uint64_t stream_key, cg_capture_mode mode,
                            bool into_graph);
/* A capture end: _enter before the driver's call (gate shared), _leave after
 * it; returns the result for the caller (an emulated invalidation turns
 * success into CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and discards the graph),
 * then runs deferred unloads that may now run. */
void cg_capture_end_enter(void);
CUresult cg_capture_end_leave(uint64_t stream_key, CUresult driver_result, CUgraph *graph);

/* The capture gate, held exclusive (see guard.c): no capture begins or ends
 * while it is held. For calls that must not race a begin. */
void cg_gate_lock(void);
void cg_gate_unlock(void);

/* A load as a wrapper hands it over: what to inspect, and how to make the
 * real call. */
typedef struct cg_load {
  cg_entry_point ep;
  const void *image;  /* in-memory image, or NULL */
  const char *path;   /* file name for cuModuleLoad / cuLibraryLoadFromFile */
  bool is_library;    /* out receives a CUlibrary */
  void **out;         /* CUmodule* or CUlibrary* */
  CUresult (*invoke)(const struct cg_load *self);
  const void *args;   /* the wrapper's arguments, for invoke */
} cg_load;
CUresult cg_guard_load(const cg_load *l);

typedef struct cg_unload {
  cg_entry_point ep;
  void *handle;       /* CUmodule or CUlibrary */
  bool is_library;
  CUresult (*invoke)(void *handle);
} cg_unload;
CUresult cg_guard_unload(const cg_unload *u);

/* True when no open capture prohibits the calling thread. */
bool cg_guard_self_unprohibited(void);

/* An open capture as the model names it: its stream and its sequence number
 * (a stream's next capture has another id). */
typedef struct {
  uint64_t stream, id;
} cg_capture_ref;
/* The open captures that prohibit the calling thread: up to cap written to
 * out, the total returned. */
size_t cg_guard_prohibitor_refs(cg_capture_ref *out, size_t cap);
/* True when none of the n captures is still open. */
bool cg_guard_refs_closed(const cg_capture_ref *refs, size_t n);

/* Start-up, fork and exit bookkeeping (init.c). */
void cg_guard_init(void);
void cg_guard_atfork_prepare(void);
void cg_guard_atfork_parent(void);
void cg_guard_atfork_child(void);
void cg_guard_exit(void);

#endif
