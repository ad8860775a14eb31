/* The few lines capguard run prints after its command ends: captures, events
 * by kind, kernels recorded, and what to do next. Read from the part of the
 * log this run appended. */
#ifndef CAPGUARD_RUN_SUMMARY_H
#define CAPGUARD_RUN_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>

/* mode: the mode asked for (NULL: the shim's default, guard). */
void cg_run_summary(FILE *out, const char *log_path, long long offset, bool temporary,
                    const char *mode);

#endif
