/* The report's section on memory a live graph reads, freed (the
 * stale-pointer check, docs/stale.md): the log's stale-free and stale-launch
 * events grouped by process, graph exec and allocation, each group with what
 * to do (the report's stale groups, meaning/stale_groups.h). Rendered as
 * text, JSON, HTML and trace events. */
#ifndef CAPGUARD_REPORT_STALE_H
#define CAPGUARD_REPORT_STALE_H

#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "report.h"

void cgr_print_stale_text(FILE *out, const cgr_report *rep, cg_palette pal);
json_t *cgr_stale_json(const cgr_report *rep);
void cgr_print_stale_html(FILE *o, const cgr_report *rep);
/* Appends one instant event per stale event to a trace's traceEvents. */
void cgr_stale_trace(json_t *evs, const cgr_report *rep, long long t0);

#endif
