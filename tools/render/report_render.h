/* Renderings of a report (meaning/report.h): text for people, JSON for machines, a
 * self-contained HTML page (inline CSS and SVG, nothing fetched). */
#ifndef CAPGUARD_REPORT_RENDER_H
#define CAPGUARD_REPORT_RENDER_H

#include <stdio.h>

#include "cli.h"
#include "process_command.h"
#include "report.h"

void cgr_print_text(FILE *out, const cgr_report *rep, cg_palette pal);
/* 0, or -1 when writing failed */
int cgr_print_json(FILE *out, const cgr_report *rep);
int cgr_print_html(FILE *out, const cgr_report *rep);
/* Chrome/Perfetto trace-event JSON. */
int cgr_print_trace(FILE *out, const cgr_report *rep);

/* "module-load 3, module-unload 0, allocation 1": loads and unloads always,
 * the schema's other event kinds when they happened, in row order, then
 * ", other N" for words this reader does not know. */
void cgr_print_event_counts(FILE *out, const cgr_report *rep);
/* lead and "refused 3, served 1": the verdicts that happened, in the schema's
 * row order, then "other N"; nothing when no call was made. */
void cgr_print_verdict_counts(FILE *out, const cgr_report *rep, const char *lead);

#endif
