/* The driver's own log (cuLogsRegisterCallback, drivers 12.9 and later): it
 * names every refused call by its entry point, wrapped by capguard or not
 * ("Returning 900 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) from cuFoo"), on
 * the thread that made it, with that call on the stack. capguard registers
 * one callback of its own, at the first driver use (driver.c); the program's
 * own callbacks are the driver's business and keep receiving everything. */
#ifndef CAPGUARD_DRIVER_LOG_CALLBACK_H
#define CAPGUARD_DRIVER_LOG_CALLBACK_H

#include <cuda.h>
#include <stddef.h>

/* The callback driver.c registers. It may run with the driver's own locks
 * held: it never calls the driver, never takes the capture gate (held across
 * driver calls), only the model's lock (never held across one), and writes
 * nothing: the break it names is written with its capture's record. */
void cg_driver_log_callback(void *data, CUlogLevel level, char *message, size_t length);

#endif
