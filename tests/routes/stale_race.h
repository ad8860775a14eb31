/* stale_probe's race op (stale_race.c). */
#ifndef STALE_RACE_H
#define STALE_RACE_H

#include <cuda.h>

/* Runs the threads; prints frees=N (the frees of watched memory made) and
 * returns 0, or 2 on a failed call. */
int stale_race(CUmodule mod);

#endif
