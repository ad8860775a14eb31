/* The calls that break captures on every driver (allocations, frees,
 * graph-exec destroys, module and library unloads, cuCtxSetLimit,
 * synchronisation, event queries and waits): what happens to one made while
 * something captures. Their wrappers (breaker_wrappers.c,
 * stream_work_wrappers.c) call in here only when something captures;
 * otherwise they pass straight to the driver after one atomic load. */
#ifndef CAPGUARD_BREAKERS_H
#define CAPGUARD_BREAKERS_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "calls.h"

/* A breaker as its wrapper hands it over (a module or library unload: kind
 * CG_EV_MODULE_UNLOAD, fix CG_FIX_DEFER_UNLOAD, target the handle,
 * invoke_handle the unload, made under the capture gate). */
CUresult cg_breaker_call(const cg_call *c);
/* The driver refused a call its wrapper passed straight through (nothing
 * captured when it looked): reported after the fact. */
void cg_breaker_refused_unseen(cg_entry_point ep, cg_event_kind kind, cg_rule rule, CUresult r);

#endif
