/* The targets of the breakers' x86-64 fast paths (route/fast_path.h,
 * CG_FAST_BREAKER): each row's word holds the driver's function where the
 * row may go straight to the driver with nothing capturing, else the row's
 * divert, which sends the call to its C body. */
#ifndef CAPGUARD_BREAKER_TARGETS_H
#define CAPGUARD_BREAKER_TARGETS_H

/* A row's flags (the fast path's holder writes them, this floor reads
 * them): CG_BT_FAST, the row has the fast path; CG_BT_BLOCKS, it blocks
 * until the GPU is done (its fast path marks the hang watch's slot itself);
 * CG_BT_FREES, it frees memory (with the stale check on, its C body tells
 * it: the row keeps its divert). */
enum { CG_BT_FAST = 1, CG_BT_BLOCKS = 2, CG_BT_FREES = 4 };

/* Every row's target set from the driver's pointers (driver_fns: by entry
 * point), at the first driver use, before cg_ep_real is published: the
 * words are zero until then, and the fast path runs only in a thread that
 * holds a slot of the breakers' fence, which a C body claims only after it
 * saw a pointer of cg_ep_real. */
void cg_breaker_targets_publish(void *const *driver_fns);

#endif
