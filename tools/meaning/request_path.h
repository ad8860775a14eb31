/* Loads on the request path (docs/request-path.md): which of a log's
 * request-path-load events count. A load made after serving began counts;
 * one made within the quiet window after the launch that may have begun
 * serving (provisional) counts unless a capture of its process began within
 * that window: the start-up was capturing in waves, and the load was a
 * start-up load between them. The shim counts them the same way
 * (shim/decide/serving/serving.c). */
#ifndef CAPGUARD_REQUEST_PATH_H
#define CAPGUARD_REQUEST_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "log_reader.h"

/* The quiet window, as the shim's CG_SERVING_QUIET_NS. */
#define CGR_SERVING_QUIET_NS 2000000000ll

typedef struct {
  size_t loads, served, lazy;  /* counted; of them served from the priming file; the runtime's lazy loads */
  long long load_ns;           /* time in those load calls */
  long long first_after_ns;    /* the first, after serving began (-1: none) */
  size_t first;                /* index into log->reqs of the first counted (the earliest after serving) */
} cgr_request_totals;

/* Whether log->reqs[i] counts as a load on the request path. */
bool cgr_request_counts(const cgl_log *log, size_t i);
void cgr_request_totals_of(const cgl_log *log, cgr_request_totals *t);

#endif
