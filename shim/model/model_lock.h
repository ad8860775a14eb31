/* The capture model behind captures.c, for the other files of the capture
 * bookkeeping (capture_hits.c) only: everyone else asks captures.h. */
#ifndef CAPGUARD_CAPTURES_MODEL_H
#define CAPGUARD_CAPTURES_MODEL_H

#include "capguard/capture_model.h"

/* The model with its lock held (NULL, still locked, when it could not be
 * made); every lock is paired with an unlock. Never held across a driver
 * call, a report or the loader's lock. */
cg_model *cg_captures_model_lock(void);
void cg_captures_model_unlock(void);

#endif
