/* The page's pieces several of its sections share: a verdict's colour and
 * word, a kernel's name (its exact symbol on hover), an event's kernels. */
#ifndef CAPGUARD_HTML_CELLS_H
#define CAPGUARD_HTML_CELLS_H

#include <stdio.h>

#include "report.h"

/* The most rows a table of the page shows (the JSON and the log hold them all). */
enum { CGR_HTML_MAX_ROWS = 500 };

/* A verdict's colour in the timeline and the tables. */
const char *cgr_html_verdict_colour(cg_verdict v);
/* The verdict's word, "?" for one this reader does not know. */
const char *cgr_html_verdict_word(cg_verdict v);
/* A kernel's display form, its exact symbol in the title when they differ. */
void cgr_html_kernel_name(FILE *o, const char *name);
/* After a table cut at CGR_HTML_MAX_ROWS rows of total: "and N more WHAT
 * (capguard report --json lists them all)"; nothing when none was cut. */
void cgr_html_more_rows(FILE *o, size_t total, const char *what);
/* An event's kernels, one a line. */
void cgr_html_kernel_cell(FILE *o, const cgl_event *e);

#endif
