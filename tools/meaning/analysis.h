/* What a person needs from a log: the captures that broke and the first call
 * that broke each, the offending kernels and call sites (deduplicated, with
 * counts), and the advice that follows. Shared by the text, JSON and HTML
 * renderings and by run's closing summary. */
#ifndef CAPGUARD_REPORT_ANALYSIS_H
#define CAPGUARD_REPORT_ANALYSIS_H

#include <stdint.h>

#include "analysis_types.h"
#include "log_reader.h"

void cgr_analyse(const cgl_log *log, cgr_analysis *a);
/* Count every run of all (grouped by cgl_group_runs) into a->runs; shown is the
 * run a was analysed on, SIZE_MAX for all. */
void cgr_count_runs(const cgl_log *all, size_t shown, cgr_analysis *a);

/* Why a breaking call broke its capture, in words, e.g. "the driver (CUDA 12.2)
 * refused it: drivers before 12.3 refuse module loads during capture". */
void cgr_why(const cgl_event *e, char *buf, size_t cap);
/* Up to max kernel names of an event, comma-separated ("" when none); ", ..." when cut. */
void cgr_kernel_list(const cgl_event *e, size_t max, char *buf, size_t cap);
void cgr_free(cgr_analysis *a);

#endif
