/* The report's section on hangs (the hang watch, CAPGUARD_HANG_S,
 * docs/hangs.md): the ranks lined up by their launches of each graph a
 * launch hung in (meaning/hang_lineup.h), then each hang the log holds
 * (a launch not finished, a call waiting, a teardown held by live graphs)
 * and the execs holding collectives still alive at exit. A log with only
 * launch counts (a healthy pause) says nothing. Rendered as text, JSON,
 * HTML and trace events. */
#ifndef CAPGUARD_REPORT_HANG_H
#define CAPGUARD_REPORT_HANG_H

#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "report.h"

void cgr_print_hang_text(FILE *out, const cgr_report *rep, cg_palette pal);
/* NULL when there is nothing to say. */
json_t *cgr_hang_json(const cgr_report *rep);
void cgr_print_hang_html(FILE *o, const cgr_report *rep);
/* Appends one instant event per hang event to a trace's traceEvents. */
void cgr_hang_trace(json_t *evs, const cgr_report *rep, long long t0);

#endif
