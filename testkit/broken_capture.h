/* The capture the host tests break on purpose: a global-mode capture with a
 * cuMemAlloc inside (every driver refuses an allocation while a global
 * capture prohibits the thread, 900, and the end answers 901), which
 * capguard reports. Through tk_driver_get, so after tk_driver_open. */
#ifndef CAPGUARD_TESTKIT_BROKEN_CAPTURE_H
#define CAPGUARD_TESTKIT_BROKEN_CAPTURE_H

#include <cuda.h>

/* Begins a capture on s, allocates inside it, ends it and destroys any
 * graph the driver returned. Nothing when the begin itself fails. */
void tk_broken_capture(CUstream s);

#endif
