/* What happens at a capture begin or end, and to a module load made while a
 * capture prohibits the calling thread: guard.c asks the capture
 * bookkeeping (model/), priming and policy, and reports. It decides loads
 * only (an unload is a deferrable call: breakers.h). The wrappers
 * (begin_end_wrappers.c, module_wrappers.c) call in here for loads only when
 * something captures; otherwise they pass straight to the driver after one
 * atomic load. */
#ifndef CAPGUARD_GUARD_H
#define CAPGUARD_GUARD_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "capguard/capture_model.h"
#include "capguard/event.h"
#include "calls.h"
#include "live_captures.h"

/* A capture begin: _enter before the driver's call (priming runs here, the
 * begin site is taken, the gate is held shared), _leave after it with the
 * driver's result (the model learns of the capture, the gate is released). */
void *cg_capture_begin_enter(void *ra, void *ra_slot, CUstream stream, bool ptsz);
void cg_capture_begin_leave(void *site, CUresult driver_result, CUstream stream, bool ptsz,
                            cg_capture_mode mode, bool into_graph);
/* A capture end: _enter before the driver's call (gate shared), _leave after
 * it; returns the result for the caller (an emulated invalidation turns
 * success into CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and discards the graph),
 * then runs deferred unloads that may now run. */
void cg_capture_end_enter(CUstream s, bool ptsz);
CUresult cg_capture_end_leave(CUstream stream, bool ptsz, CUresult driver_result, CUgraph *graph);
/* cuStreamDestroy* while something captures: invoke(stream) under the gate
 * held exclusive; a capture on the stream is then over (its record written,
 * deferred calls that waited for it run). */
CUresult cg_capture_stream_destroy(cg_entry_point ep, CUstream stream, CUresult (*invoke)(CUstream));
/* Counts stream destroys (every one, capturing or not), after the driver's
 * call: the flags a begin keeps for a stream hold only while none was. */
extern unsigned long cg_stream_generation;
static inline CUresult cg_stream_destroyed(CUresult r) {
  __atomic_add_fetch(&cg_stream_generation, 1, __ATOMIC_RELEASE);
  return r;
}

/* A load (model/calls.h) made while something captures. */
CUresult cg_guard_load(const cg_load *l);
/* The driver refused a load its wrapper passed straight through: report
 * it. */
void cg_guard_refused_unseen(cg_entry_point ep);

/* Start-up, fork and exit bookkeeping (init.c). */
void cg_guard_atfork_child(void);
void cg_guard_exit(void);

#endif
