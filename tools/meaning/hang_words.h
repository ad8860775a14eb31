/* Each hang the hang watch logged (CAPGUARD_HANG_S, docs/hangs.md) as one
 * sentence, with what to do where the shim has a sentence for it
 * (cg_hang_advice): a launch not finished, a call waiting, a capture open
 * too long, a teardown held by live graphs, and the processes whose graph
 * execs holding collectives were alive at exit. A log with only launch
 * counts (a healthy pause) has none. */
#ifndef CAPGUARD_HANG_WORDS_H
#define CAPGUARD_HANG_WORDS_H

#include <stdbool.h>
#include <stddef.h>

#include "log_reader.h"

/* A hang said: an event (hang != NULL) or a process whose graph execs
 * holding collectives were alive at exit (hang NULL), in words. */
typedef struct {
  const cgl_hang *hang;
  size_t proc;
  char *text; /* malloc'd */
} cgr_hang_said;

/* Whether the log has anything to say about hangs. */
bool cgr_hangs_any(const cgl_log *log);
/* The hangs in words: events first, in the order read, then the processes;
 * *out malloc'd (free with cgr_hangs_said_free), NULL when none. */
size_t cgr_hangs_said(const cgl_log *log, cgr_hang_said **out);
void cgr_hangs_said_free(cgr_hang_said *v, size_t n);

#endif
