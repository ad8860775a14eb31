/* Priming: images needed during capture are recorded in the priming file;
 * on the next run they are loaded before the first capture begins on a
 * context, and an identical load requested mid-capture is served from them,
 * so no loader call reaches the driver during capture. Guard mode only. */
#ifndef CAPGUARD_PRIMING_H
#define CAPGUARD_PRIMING_H

#include <cuda.h>
#include <stdbool.h>

#include "capguard/event.h"
#include "capguard/image.h"

/* Before the driver sees a capture begin: preload this context's records
 * (once per context, and only while no capture prohibits this thread). */
void cg_priming_before_begin(void);
/* A module identical byte for byte to image, loaded earlier on the current
 * context and not yet handed out, or NULL. Marks it handed out. */
CUmodule cg_priming_take(const cg_image_info *image);
/* Append image to the priming file (guard mode). */
void cg_priming_record(const cg_image_info *image);
void cg_priming_summary(cg_summary *s);
void cg_priming_after_fork_child(void);

#endif
