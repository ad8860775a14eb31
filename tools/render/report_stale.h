/* The report's section on memory a live graph reads, freed (the
 * stale-pointer check, docs/stale.md): the log's stale-free and stale-launch
 * events grouped by process, graph exec and allocation, each group with what
 * to do. Rendered as text, JSON, HTML and trace events. */
#ifndef CAPGUARD_REPORT_STALE_H
#define CAPGUARD_REPORT_STALE_H

#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "log_reader.h"

typedef struct {
  size_t first;          /* index into log->stale: the group's earliest event */
  size_t frees, launches; /* its events of each kind */
  long first_free, first_launch; /* index of the first of each, -1 when none */
} cgr_stale_group;

/* The groups (by process, exec and allocation start), in the order their
 * first events were read; *out is malloc'd (free it), NULL when none. */
size_t cgr_stale_groups(const cgl_log *log, cgr_stale_group **out);

void cgr_print_stale_text(FILE *out, const cgl_log *log, cg_palette pal);
json_t *cgr_stale_json(const cgl_log *log);
void cgr_print_stale_html(FILE *o, const cgl_log *log);
/* Appends one instant event per stale event to a trace's traceEvents. */
void cgr_stale_trace(json_t *evs, const cgl_log *log, long long t0);

#endif
