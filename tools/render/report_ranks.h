/* The ranks of a distributed job side by side (meaning/rank_view.h), in each
 * rendering: a table of ranks x captures (began, captured, broken, the first
 * offender) and the differences between ranks. Each prints nothing when the
 * log holds fewer than two ranks. */
#ifndef CAPGUARD_REPORT_RANKS_H
#define CAPGUARD_REPORT_RANKS_H

#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "report.h"

/* "Ranks (2 of a world of 2)" (after a blank line when indent is "") and its table, then "Differences between
 * ranks" and one line each; every line begins with indent. Returns whether
 * it printed anything. */
bool cgr_print_ranks_text(FILE *out, const cgr_report *rep, cg_palette pal, const char *indent);
/* {"ranks":[{rank, pid, captures, captured, broken, first_offender}], "differences":[...]},
 * or NULL when fewer than two ranks. */
json_t *cgr_ranks_json(const cgr_report *rep);
void cgr_print_ranks_html(FILE *out, const cgr_report *rep, void (*esc)(FILE *, const char *));

#endif
