/* Capture time in the report's renderings (meaning/capture_time.h): the
 * run's line, each process's figures and its slowest captures, in JSON,
 * HTML and the trace (the text's section is report_text.c's, which names
 * processes for the others). */
#ifndef CAPGUARD_REPORT_CAPTURE_TIME_H
#define CAPGUARD_REPORT_CAPTURE_TIME_H

#include <stdio.h>

#include <jansson.h>

#include "cli.h"
#include "report.h"

/* The process's capture time as an object, NULL when it did not say. */
json_t *cgr_capture_time_process_json(const cgl_process *pr);
/* The log's: graphs, timed, ns, to_first_replay_ns, slowest; NULL when none said. */
json_t *cgr_capture_time_json(const cgr_report *rep);
/* A paragraph and a table of the slowest captures; esc writes HTML text. */
void cgr_capture_time_html(FILE *o, const cgr_report *rep, void (*esc)(FILE *, const char *));
/* Each process's first capture to its first replay, a span on its main
 * thread's track ("X"), with its capture time in args. */
void cgr_capture_time_trace(json_t *evs, const cgr_report *rep, double (*us_since)(long long, long long),
                            long long t0);

#endif
