/* What guard mode (and the opt-in emulation and rescue) do with a call that
 * a capture prohibits, instead of letting it reach the driver: module loads
 * served, emulated or rescued; unloads, frees and graph-exec destroys
 * deferred until the capture ends; allocations rescued. */
#ifndef CAPGUARD_POLICY_H
#define CAPGUARD_POLICY_H

#include <stdbool.h>

#include "capguard/event.h"
#include "calls.h"
#include "priming.h"

/* Decide a prohibited load without the driver's plain path: served from the
 * priming pool (key: its options; NULL when capguard cannot reproduce them,
 * so it is never served), made in relaxed mode (rescue), or refused as an
 * older driver would (emulation). differ (cap bytes) gets how its options
 * differ from those recorded for its bytes, when that kept it from being
 * served. Returns false to let the driver decide as usual. */
bool cg_policy_load(const cg_load *l, const cg_image_info *image, const cg_load_key *key, char *differ,
                    size_t cap, CUresult *result, cg_verdict *verdict);

/* Queue a prohibited call on one handle (an unload, a free, a graph-exec
 * destroy; guard mode, gate held): invoke(handle) runs once every capture
 * that prohibits the thread now has ended. True if queued (a handle queued
 * already for the same call counts: it still runs once). False with *oom
 * set when there was no room to queue it (the queue is bounded, or memory
 * ran out): the call then goes to the driver, as without capguard. */
bool cg_policy_defer(void *handle, CUresult (*invoke)(void *handle), bool *oom);
/* The one warning for a call cg_policy_defer had no room for; said with no
 * lock held (stderr may block). */
void cg_policy_warn_no_room(void);
/* The call made with the calling thread in relaxed mode, where no capture
 * prohibits it (rescue: measured sound on driver 580 for loads and
 * allocations); the thread's mode is put back after. */
CUresult cg_policy_call_relaxed(CUresult (*invoke)(const void *args), const void *args);
/* After a capture ends, and at other safe points: carry out queued calls
 * if nothing prohibits this thread any more. */
void cg_policy_run_deferred(void);
/* At exit: queued calls are dropped, not run; the driver may already have
 * torn down their context, and process exit frees them anyway. */
void cg_policy_at_exit(void);
void cg_policy_atfork_child(void);

#endif
