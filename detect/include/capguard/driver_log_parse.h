/* The driver's log lines (cuLogsRegisterCallback, drivers 12.9 and later)
 * as capguard reads them: "Returning 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
 * from cuLaunchKernel" names a refused call and what it returned
 * (driver-semantics.md, third matrix). Pure: no I/O, no allocation, safe in
 * the shim's log callback. */
#ifndef CAPGUARD_DRIVER_LOG_PARSE_H
#define CAPGUARD_DRIVER_LOG_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* Parses one message (length bytes, or up to a NUL before them; anything may
 * come before "Returning", such as a time stamp): true for
 * "Returning N (NAME) from CALL", with *code = N (at most 9 digits) and the
 * call's name (letters, digits, '_') copied to call, NUL-terminated and cut to
 * cap - 1 bytes; false, with nothing written, for any other line. */
bool cg_driver_log_parse(const char *message, size_t length, int *code, char *call, size_t cap);

#endif
