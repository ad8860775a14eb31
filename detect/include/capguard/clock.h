/* capguard's clocks: the log's times (CLOCK_REALTIME, ns since the epoch) and
 * waits (CLOCK_MONOTONIC). One place, so every record of a process is timed
 * the same way. 0 when the clock cannot be read. */
#ifndef CAPGUARD_CLOCK_H
#define CAPGUARD_CLOCK_H

#include <stdint.h>

uint64_t cg_now_ns(void);       /* CLOCK_REALTIME */
uint64_t cg_monotonic_ns(void); /* CLOCK_MONOTONIC */

#endif
