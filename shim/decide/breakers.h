/* The calls that break captures on every driver (allocations, frees,
 * graph-exec destroys, cuCtxSetLimit, synchronisation, event queries and
 * waits): what happens to one made while something captures. The wrappers
 * (breaker_wrappers.c) call in here only when something captures;
 * otherwise they pass straight to the driver after one atomic load. */
#ifndef CAPGUARD_BREAKERS_H
#define CAPGUARD_BREAKERS_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "capguard/log_schema.h"
#include "live_captures.h"
#include "entry_points.h"

/* What guard mode may do instead of letting the driver break the capture
 * (each fix is its own verdict). */
typedef enum {
  CG_FIX_NONE,          /* reported only */
  CG_FIX_RESCUE,        /* CAPGUARD_RESCUE=1: made in relaxed mode (allocations) */
  CG_FIX_DEFER_FREE,    /* returns success, runs when the capture ends (frees) */
  CG_FIX_DEFER_DESTROY, /* the same for cuGraphExecDestroy */
  CG_FIX_NOT_READY,     /* an event recorded in a still-capturing stream is not ready (cuEventQuery) */
} cg_fix;

/* A call as its wrapper hands it over. */
typedef struct {
  cg_entry_point ep;
  cg_event_kind kind;
  cg_rule rule;
  cg_fix fix;
  uint64_t target; /* the stream, event, pointer or executable graph it works on (0: none) */
  bool has_target, ptsz;
  CUresult (*invoke)(const void *args); /* makes the real call from args */
  const void *args;
  /* the call on its one handle, for deferral (NULL when not deferrable) */
  CUresult (*invoke_handle)(void *handle);
} cg_call;

CUresult cg_breaker_call(const cg_call *c);
/* The driver refused a call its wrapper passed straight through (nothing
 * captured when it looked): reported after the fact. */
void cg_breaker_refused_unseen(cg_entry_point ep, cg_event_kind kind, CUresult r);

#endif
