/* A context's end: modules and priming pools live and die with their context. */
#ifndef CAPGUARD_CONTEXT_END_H
#define CAPGUARD_CONTEXT_END_H

#include <cuda.h>

typedef enum {
  CG_CTX_DESTROYED,       /* cuCtxDestroy* */
  CG_CTX_PRIMARY_RESET,   /* cuDevicePrimaryCtxReset*: the primary context dies, its handle stays */
  CG_CTX_PRIMARY_RELEASE, /* cuDevicePrimaryCtxRelease*: dies at the last reference */
} cg_context_end;

/* Before the driver's call: the context that may end (ctx itself for a
 * destroy; for the primary calls, dev's primary context if it is active),
 * or NULL when nothing capguard keeps could die with it. */
CUcontext cg_context_end_enter(CUcontext ctx, CUdevice dev, cg_context_end how);
/* After it, with the driver's answer: if the context ended, what was
 * preloaded on it is forgotten (a later context with the same handle gets
 * its own). */
void cg_context_end_leave(CUcontext ctx, CUdevice dev, cg_context_end how, CUresult r);

#endif
