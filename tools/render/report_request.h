/* Loads on the request path (docs/request-path.md) in the page and the
 * trace: one row, and one complete event as long as the load call, each. */
#ifndef CAPGUARD_REPORT_REQUEST_H
#define CAPGUARD_REPORT_REQUEST_H

#include <jansson.h>
#include <stdio.h>

#include "log_reader.h"

void cgr_print_request_html(FILE *o, const cgl_log *log);
void cgr_request_trace(json_t *evs, const cgl_log *log, long long t0);

#endif
