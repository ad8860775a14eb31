/* The stale-pointer check's events (stale-free, stale-launch: docs/stale.md)
 * grouped as the report shows them: one group per process, graph exec and
 * allocation, each with what to do (the findings table's row). */
#ifndef CAPGUARD_STALE_GROUPS_H
#define CAPGUARD_STALE_GROUPS_H

#include <stddef.h>

#include "log_reader.h"

typedef struct {
  size_t first;                  /* index into log->stale: the group's earliest event */
  size_t frees, launches;        /* its events of each kind */
  long first_free, first_launch; /* index of the first of each, -1 when none */
  const char *advice;            /* what to do: the findings table's sentence (owned by the report) */
} cgr_stale_group;

/* The groups (by process, exec and allocation start), in the order their
 * first events were read; *out is malloc'd (free it), NULL when none. The
 * advice is left NULL (the report asks the findings table). */
size_t cgr_stale_groups(const cgl_log *log, cgr_stale_group **out);

#endif
