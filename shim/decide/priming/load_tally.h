/* How many copies of each image this process has had alive at once that
 * were loaded while a capture prohibited it, as modules and as libraries.
 * The priming file keeps the most one process needed, so the next run
 * preloads that many (and reloads a served copy the program unloaded,
 * priming.c), not one per load: 2,000 captures that each load and unload
 * one image need one copy, not 2,000 (docs/reliability.md, attack 10). */
#ifndef CAPGUARD_LOAD_TALLY_H
#define CAPGUARD_LOAD_TALLY_H

#include <stdbool.h>
#include <stdint.h>

#include "capguard/image.h"
#include "capguard/load_options.h"

/* The key copies are counted under: the image's hash with its load options'
 * folded in (the same bytes loaded with other options are another entry). */
cg_hash128 cg_tally_key(cg_hash128 image, const cg_load_opts *opts);

/* One more copy of the image alive (by hash and size); returns the most
 * alive at once so far, or 0 when the table is full (then it is unknown). */
uint32_t cg_tally_add(cg_hash128 hash, uint64_t size, bool library);
/* The copy just counted by cg_tally_add is handle (a CUmodule or
 * CUlibrary) loaded on context ctx: its unload, or the end of ctx, makes it
 * one copy fewer. */
void cg_tally_handle(void *handle, cg_hash128 hash, uint64_t size, bool library, void *ctx);
/* The copy just counted by cg_tally_add never came to be (the load was
 * refused or failed): one fewer alive, the most at once unchanged. A
 * program that retries a refused load in every capture needs one copy,
 * not one per capture. */
void cg_tally_not_loaded(cg_hash128 hash, uint64_t size, bool library);
/* handle was unloaded (by the driver, now): a copy fewer if it was one. */
void cg_tally_unloaded(void *handle);
/* The context ctx ended: the modules loaded on it are gone (libraries stay). */
void cg_tally_context_gone(void *ctx);
/* The most copies alive at once so far, 0 if never counted or unknown. */
uint32_t cg_tally_get(cg_hash128 hash, uint64_t size, bool library);
/* A forked child is a new process with counts of its own. */
void cg_tally_reset(void);

#endif
