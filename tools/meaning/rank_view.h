/* The ranks of a distributed job side by side: which process ran each rank
 * (the launcher's variables its start record carries), how many captures
 * each began and broke and what broke the first, and where the ranks differ
 * (NCCL requires every rank to capture the same work; a rank that broke a
 * capture the others made, or captured fewer graphs, is where a cross-rank
 * failure or hang starts). */
#ifndef CAPGUARD_RANK_VIEW_H
#define CAPGUARD_RANK_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis_types.h" /* struct cgr_proc_stats */
#include "log_reader.h"

/* 20 bytes, as a job of a million ranks holds a million of them at the
 * report's peak: 4-byte counts and indices (a log holds fewer than 2^31
 * processes and captures, log_reader.h), the rank and world size its
 * process's (cgr_rank_row_rank), its first offender worded when shown
 * (cgr_rank_row_offender), not kept. */
typedef struct {
  uint32_t proc;     /* the rank's process: of those with this rank, the one that began most captures */
  uint32_t captures; /* captures it began */
  uint32_t captured; /* of those, ended with a graph */
  uint32_t broken;
  int32_t first_broken; /* index into log->caps of its earliest broken capture, -1 if none */
} cgr_rank_row;

typedef struct {
  cgr_rank_row *rows;    /* by rank */
  size_t n;
  char **diffs;          /* sentences, one a difference */
  size_t n_diffs;
  size_t more_diffs;     /* differences found past the ones kept */
  bool any_broken;       /* some rank broke a capture: the ranks are never said to have captured alike */
  const cgl_process *procs; /* the log's, whose processes the rows name */
  const cgl_log *log;       /* the log the rows index */
} cgr_rank_view;

/* Row r's rank and the world size its process said. */
static inline long long cgr_rank_row_rank(const cgr_rank_view *v, const cgr_rank_row *r) {
  return cgl_process_num(&v->procs[r->proc], CGL_PR_RANK);
}
static inline long long cgr_rank_row_world(const cgr_rank_view *v, const cgr_rank_row *r) {
  return cgl_process_num(&v->procs[r->proc], CGL_PR_WORLD_SIZE);
}

/* Row r's first offender, "cuModuleLoadData of K at SITE", into buf; ""
 * when it broke none. Worded when shown: a million ranks of which a tenth
 * broke kept a tenth of a million strings at the report's peak. */
void cgr_rank_row_offender(const cgr_rank_view *v, const cgr_rank_row *r, char *buf, size_t cap);

/* Fills v from log, whose analysis counted each process's captures in st
 * (cgr_analysis.procs); v->n < 2 (no job of two ranks or more in the
 * log): the renderers show nothing. Ends the command with one line when
 * memory runs out. */
void cgr_rank_view_build(const cgl_log *log, const struct cgr_proc_stats *st, cgr_rank_view *v);
void cgr_rank_view_free(cgr_rank_view *v);

#endif
