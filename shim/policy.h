/* What guard mode (and the opt-in emulation and rescue) do with a module load
 * or unload that a capture prohibits, instead of letting it reach the driver. */
#ifndef CAPGUARD_POLICY_H
#define CAPGUARD_POLICY_H

#include <stdbool.h>

#include "capguard/event.h"
#include "guard.h"

/* Decide a prohibited load without the driver's plain path: served from the
 * priming pool, made in relaxed mode (rescue), or refused as an older driver
 * would (emulation). Returns false to let the driver decide as usual. */
bool cg_policy_load(const cg_load *l, const cg_image_info *image, CUresult *result, cg_verdict *verdict);

/* Queue a prohibited unload (guard mode); true if queued. False with *oom
 * set when there was no room to queue it (the queue is bounded, or memory
 * ran out): the unload then goes to the driver, as without capguard. */
bool cg_policy_defer_unload(const cg_unload *u, bool *oom);
/* After a capture ends, and at other safe points: carry out queued unloads
 * if nothing prohibits this thread any more. */
void cg_policy_run_deferred(void);
/* At exit: queued unloads are dropped, not run; the driver may already have
 * torn down their context, and process exit frees them anyway. */
void cg_policy_at_exit(cg_summary *s);
void cg_policy_after_fork_child(void);

#endif
