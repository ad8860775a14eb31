/* What the hang watch's events (CAPGUARD_HANG_S, docs/hangs.md) mean
 * across ranks: each graph (its capture site and capture number) that a
 * rank's launch did not finish in, with every rank's launches of it lined
 * up, the rank behind named, and a rank busy in a graph with no collective
 * called busy, not waiting for a peer. Facts, one sentence each. */
#ifndef CAPGUARD_HANG_LINEUP_H
#define CAPGUARD_HANG_LINEUP_H

#include <stddef.h>

#include "log_reader.h"

typedef struct {
  char *text;       /* the sentence (malloc'd) */
  long long behind; /* the process (index) behind, -1 when none is named */
  bool busy;        /* a launch busy on its own, not waiting for a peer */
} cgm_lineup;

/* The sentences, one per graph a launch hung in; *out malloc'd (free with
 * cgm_lineup_free), NULL when none. */
size_t cgm_hang_lineup(const cgl_log *log, cgm_lineup **out);
void cgm_lineup_free(cgm_lineup *l, size_t n);
/* "rank 1" when the process's rank is known, else "pid 42". */
void cgm_hang_who(const cgl_log *log, size_t proc, char *buf, size_t cap);

#endif
