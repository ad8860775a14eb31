/* Priming: images needed during capture are recorded in the priming file;
 * on the next run they are loaded before the first capture begins on a
 * context, as many times as one process needed them, and each load requested
 * mid-capture of identical bytes is served one of them, so no loader call
 * reaches the driver during capture. Module and library loads alike. Guard
 * mode only. */
#ifndef CAPGUARD_PRIMING_H
#define CAPGUARD_PRIMING_H

#include <cuda.h>
#include <stdbool.h>

#include "capguard/event.h"
#include "capguard/image.h"

/* Before the driver sees a capture begin: preload this context's records
 * (once per context, and only while no capture prohibits this thread). */
void cg_priming_before_begin(void);
/* A load made while a capture prohibits the thread: counted (the priming file
 * keeps the most loads of each image one process needed), then served with a
 * CUmodule (library false) or CUlibrary (library true) preloaded from
 * identical bytes on the current context and not yet handed out, or NULL. */
void *cg_priming_take(const cg_image_info *image, bool library);
/* A load made while a capture prohibited the thread, and what came of it:
 * its image is recorded in the priming file (guard mode), with the loads of
 * it this process has made during capture so far, unless it was served from
 * the file already, or failed for the driver's own reasons (a bad image would
 * only fail again), or is no image capguard knows. */
void cg_priming_record(const cg_image_info *image, bool library, cg_verdict v);
void cg_priming_summary(cg_summary *s);
void cg_priming_after_fork_child(void);

#endif
