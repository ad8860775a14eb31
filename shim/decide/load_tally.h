/* How many times this process has loaded each image while a capture
 * prohibited it, as a module and as a library. The priming file keeps the
 * most loads one process needed, so the next run preloads that many. */
#ifndef CAPGUARD_LOAD_TALLY_H
#define CAPGUARD_LOAD_TALLY_H

#include <stdbool.h>
#include <stdint.h>

#include "capguard/image.h"

/* Count one more load of the image (by hash and size); returns the count so
 * far, or 0 when the table is full (then the image's count is unknown). */
uint32_t cg_tally_add(cg_hash128 hash, uint64_t size, bool library);
/* The count so far, 0 if never counted or unknown. */
uint32_t cg_tally_get(cg_hash128 hash, uint64_t size, bool library);
/* A forked child is a new process with counts of its own. */
void cg_tally_reset(void);

#endif
