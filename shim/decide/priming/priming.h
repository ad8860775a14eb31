/* Priming: images needed during capture are recorded in the priming file;
 * on the next run they are loaded before the first capture begins on a
 * context, as many copies as one process had alive at once, and each load requested
 * mid-capture of identical bytes is served one of them, so no loader call
 * reaches the driver during capture. Module and library loads alike. Guard
 * mode only. */
#ifndef CAPGUARD_PRIMING_H
#define CAPGUARD_PRIMING_H

#include <cuda.h>
#include <stdbool.h>

#include "capguard/event.h"
#include "capguard/image.h"
#include "capguard/load_options.h"
#include "capguard/metrics_format.h"

/* A load's key beyond its image bytes: its options, canonical (n == 0:
 * none), and as the caller passed them (where a served load's outputs are
 * written; NULL when there are none to write). */
typedef struct {
  const cg_load_opts *opts;
  const cg_load_opts_raw *raw;
} cg_load_key;

/* Before the driver sees a capture begin: preload this context's records
 * (once per context, and only while no capture prohibits this thread). */
void cg_priming_before_begin(CUcontext ctx); /* the thread's current context (NULL: none) */
/* A load made while a capture prohibits the thread: counted (the priming file
 * keeps the most copies of each image one process had alive at once), then served with a
 * CUmodule (library false) or CUlibrary (library true) preloaded from
 * identical bytes with identical options on the current context and not yet
 * handed out (its output options then written as the preload's were), or
 * NULL; then differ (cap bytes) says how its options differ from those the
 * file recorded for the same bytes ("" when it holds none, or no copy is
 * left). */
void *cg_priming_take(const cg_image_info *image, bool library, const cg_load_key *key, char *differ,
                      size_t cap);
/* A load made while a capture prohibited the thread, and what came of it:
 * its image is queued to be recorded in the priming file (guard mode), once
 * per process and image, when a capture ends (record_queue.h), with the most
 * copies of it this process has had alive at once during capture, unless it
 * was served from the file already, or failed for the driver's own reasons
 * (a bad image would only fail again), or is no image capguard knows.
 * A load refused (by the driver, or emulation) has broken every capture that
 * prohibits the thread already: its record is written there and then (no
 * capture left to keep file I/O off), so that a host killed before the
 * capture's end (SIGKILL, the OOM killer) has it recorded for the next run.
 * An allowed load stays queued: its capture goes on. */
void cg_priming_record(const cg_image_info *image, bool library, const cg_load_opts *opts, cg_verdict v);
/* A load made while a capture prohibited the thread, not served, that the
 * driver answered with handle: counted alive until it is unloaded. */
void cg_priming_loaded(void *handle, const cg_image_info *image, bool library, const cg_load_opts *opts);
/* The same load, not served, returned no handle (refused, or failed): the
 * copy counted for it never came to be. */
void cg_priming_not_loaded(const cg_image_info *image, bool library, const cg_load_opts *opts);

/* handle was unloaded by the driver (whenever: the wrapper's thunk or its
 * direct call): one copy fewer alive, and a served copy is loaded again
 * before the next capture begins. */
void cg_priming_unloaded(void *handle);
/* Write the queued images' records (cg_priming_record), and a hit for each
 * image this process was served and has not yet refreshed, so that prune
 * counts it as needed: once per process and image, under the file's lock,
 * never while a capture prohibits the calling thread.
 * After a capture's end (at_exit false) it does not wait: a file another
 * process holds locked, or a thread busy recording, leaves it for a later
 * end; at exit it waits as an append does. */
void cg_priming_refresh_served(bool at_exit);
/* ctx has ended (destroyed, or a primary context reset): its pool is
 * dropped, and the copies it handed out count as unloaded. Its library
 * copies not handed out are left loaded (a library outlives its context;
 * unloading it could break another thread's capture). */
void cg_priming_context_gone(CUcontext ctx);
/* Whether any context has a pool (one atomic load). */
bool cg_priming_has_pools(void);
void cg_priming_summary(cg_summary *s);
/* Whether the priming file can serve this process, for the metrics. */
void cg_priming_fleet(cg_metrics_prime *out);
void cg_priming_atfork_child(void);

#endif
