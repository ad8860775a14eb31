/* The capture model behind live_captures.c, for the other files of the capture
 * bookkeeping (break_rules.c) only: everyone else asks live_captures.h. */
#ifndef CAPGUARD_MODEL_LOCK_H
#define CAPGUARD_MODEL_LOCK_H

#include "capguard/capture_model.h"

/* The model with its lock held (NULL, still locked, when it could not be
 * made); every lock is paired with an unlock. Never held across a driver
 * call, a report or the loader's lock. */
cg_model *cg_captures_model_lock(void);
void cg_captures_model_unlock(void);
/* At exit (locks.h): *had false, nothing locked and NULL returned, when the
 * lock could not be had before the exit's deadline (one line says what is
 * skipped). */
cg_model *cg_captures_model_lock_at_exit(const char *what, bool *had);
/* What the driver said of a capture as it began (cg_captures_begun_driver_id,
 * on the beginning thread, before cg_captures_begin_leave): ticks of the
 * shim's clock, 0 unknown (capture_model.h). */
/* When an end of c's capture was entered, on the shim's clock: stamped in
 * the model, or of an end still in flight (ending_slots.h); 0: none. Under
 * the model's lock. */
uint64_t cg_captures_end_tick(const cg_capture *c);
void cg_captures_note_begun_state(uint64_t returned, uint64_t active, uint64_t invalid);

#endif
