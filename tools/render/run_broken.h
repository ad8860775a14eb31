/* The run summary's lines for broken captures: one a capture, the first few
 * (then how many more), each worded as the shim words it on stderr
 * (cg_capture_format_broken_text) with the pid put in: where the capture
 * began, and its first offender with its Python line, or that capguard saw
 * none. A capture whose log does not say gets no offender (never a guess). */
#ifndef CAPGUARD_RUN_BROKEN_H
#define CAPGUARD_RUN_BROKEN_H

#include <stdio.h>

#include "cli.h"
#include "report.h"

#define CG_RUN_BROKEN_SHOWN 3 /* lines before "and N more" */

void cg_run_broken_lines(FILE *out, const cgr_report *rep, cg_palette pal);

#endif
