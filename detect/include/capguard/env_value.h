/* The values of capguard's environment variables that are not free text:
 * one parser each, used by the shim's settings (shim/base/config.c, the hang
 * watch's shim/decide/hang/hang_watch.c) and by
 * the command's table of the variables (tools/base/env_table.c), so that
 * `capguard run` refuses exactly what the shim would not take. */
#ifndef CAPGUARD_ENV_VALUE_H
#define CAPGUARD_ENV_VALUE_H

#include <stdbool.h>

/* A driver version as cuDriverGetVersion spells it: 1000*major + 10*minor,
 * e.g. 12020. 0, or -1 for anything else. */
int cg_parse_driver_version(const char *s, int *out);
/* 1, yes, true, on / 0, no, false, off, "". 0, or -1 for anything else. */
int cg_parse_bool(const char *s, bool *out);

/* CAPGUARD_HANG_S: whole seconds from 1 to 86400 (a day), in digits only
 * (no sign, no space). 0, or -1 for anything else. */
int cg_parse_hang_seconds(const char *s, unsigned *out);

#endif
