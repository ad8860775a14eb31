/* Loads on the request path (docs/request-path.md) in the page and the
 * trace: one row, and one complete event as long as the load call, each. */
#ifndef CAPGUARD_REPORT_REQUEST_H
#define CAPGUARD_REPORT_REQUEST_H

#include <jansson.h>
#include <stdio.h>

#include "report.h"

void cgr_print_request_html(FILE *o, const cgr_report *rep);
void cgr_request_trace(json_t *evs, const cgr_report *rep, long long t0);

#endif
