/* A run's one line, when the logs hold several: the text report's "Runs"
 * list and each run's "headline" in --json say the same words. */
#ifndef CAPGUARD_REPORT_RUNS_H
#define CAPGUARD_REPORT_RUNS_H

#include <stddef.h>

#include "cli.h"
#include "report.h"

/* "run 2: pid 5200 python3 bench.py (3 processes): 4 captures, 1 broken, 1
 * ended without an exit record, 2 loads served from the priming file", the
 * counts of broken coloured by pal. */
void cgr_run_headline(const cgr_report *rep, size_t r, cg_palette pal, char *buf, size_t cap);

#endif
