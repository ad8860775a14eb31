#include "rank_view.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_display.h"
#include "plural.h"
#include "report_offender.h"
#include "xalloc.h"

#define MAX_DIFFS 8 /* sentences kept; the rest are counted */
#define DOING "comparing the ranks"
#define MAX_ID 100000 /* captures compared a rank: past that, only the counts */

/* "cuModuleLoadData of K at SITE": the first offender's call, the first kernel
 * its image holds (when the log has the event), and where it was called. */
static void offender_short(const cgl_log *log, size_t capture, char *buf, size_t cap) {
  const cgl_capture *c = &log->caps[capture];
  cgl_offender f;
  if (cgr_first_offender(log, capture, c->first_break, &f) != CGL_BY_CALL) {
    snprintf(buf, cap, "%s", c->by == CGL_BY_UNWATCHED ? CGR_UNWATCHED : "not said in the log");
    return;
  }
  const char *kernel = NULL;
  if (c->first_break >= 0 && (size_t)c->first_break < log->n_evs) {
    const cgl_event *e = &log->evs[c->first_break];
    if (e->call && *f.call && strcmp(e->call, f.call) == 0 && e->kernels->n)
      kernel = e->kernels->v[0];
  }
  const char *at = cgr_offender_at(&f);
  char disp[CG_KERNEL_DISPLAY_MAX];
  snprintf(buf, cap, "%s%s%s%s%s", *f.call ? f.call : "(unknown call)", kernel ? " of " : "",
           kernel ? cg_kernel_display(kernel, disp, sizeof disp) : "", *at ? " at " : "", at);
}

static void add_diff(cgr_rank_view *v, const char *fmt, ...) {
  if (v->n_diffs == MAX_DIFFS) {
    v->more_diffs++;
    return;
  }
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  v->diffs = cg_xrealloc(v->diffs, (v->n_diffs + 1) * sizeof *v->diffs, DOING);
  v->diffs[v->n_diffs] = cg_xrealloc(NULL, strlen(buf) + 1, DOING);
  memcpy(v->diffs[v->n_diffs++], buf, strlen(buf) + 1);
}

static int by_rank(const void *a, const void *b) {
  long long x = ((const cgr_rank_row *)a)->rank, y = ((const cgr_rank_row *)b)->rank;
  return (x > y) - (x < y);
}

/* "rank 0" or "ranks 0, 2". */
static void rank_list(const cgr_rank_view *v, const bool *pick, char *buf, size_t cap) {
  size_t n = 0, len = 0;
  for (size_t i = 0; i < v->n; i++)
    n += pick[i];
  len += (size_t)snprintf(buf, cap, "rank%s", n == 1 ? "" : "s");
  bool first = true;
  for (size_t i = 0; i < v->n && len < cap; i++) {
    if (!pick[i])
      continue;
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", first ? " " : ", ", v->rows[i].rank);
    first = false;
  }
}

/* Ranks that made different numbers of graphs, or began different numbers
 * of captures (ranks whose captures all broke made the same none). */
static void count_differences(cgr_rank_view *v) {
  bool same_made = true, same_began = true;
  for (size_t i = 1; i < v->n; i++) {
    same_made = same_made && v->rows[i].captured == v->rows[0].captured;
    same_began = same_began && v->rows[i].captures == v->rows[0].captures;
  }
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 0 ? same_made : same_began)
      continue;
    char buf[1024];
    size_t len = 0;
    for (size_t i = 0; i < v->n && len < sizeof buf; i++) {
      size_t n = pass == 0 ? v->rows[i].captured : v->rows[i].captures;
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%srank %lld %s %zu %s%s", i ? ", " : "",
                              v->rows[i].rank, pass == 0 ? "captured" : "began", n,
                              pass == 0 ? "graph" : "capture", cg_plural(n));
    }
    add_diff(v, "%s", buf);
  }
}

/* Ranks that two processes, each of which began captures, claim: a rank's
 * helpers began none (they are folded into it), so this is a RANK that
 * names no rank of this job. */
static void claim_differences(const cgl_log *log, cgr_rank_view *v) {
  for (size_t i = 0; i < v->n; i++) {
    if (i > 0 && v->rows[i - 1].rank == v->rows[i].rank)
      continue;
    size_t n = 1, len = 0;
    char pids[256] = "";
    len += (size_t)snprintf(pids, sizeof pids, "%lld", log->procs[v->rows[i].proc].pid);
    for (size_t j = i + 1; j < v->n && v->rows[j].rank == v->rows[i].rank; j++, n++)
      if (len < sizeof pids)
        len += (size_t)snprintf(pids + len, sizeof pids - len, ", %lld", log->procs[v->rows[j].proc].pid);
    if (n > 1)
      add_diff(v, "rank %lld is claimed by %zu processes that captured (pids %s)", v->rows[i].rank, n, pids);
  }
}

/* Each capture id some rank broke and another captured (a capture's id is
 * its process's count of begins: the same step on every rank). */
static void capture_differences(const cgl_log *log, cgr_rank_view *v) {
  long long last = 0;
  for (size_t c = 0; c < log->n_caps; c++)
    for (size_t i = 0; i < v->n; i++)
      if (log->caps[c].proc == v->rows[i].proc && log->caps[c].id > last && log->caps[c].id <= MAX_ID)
        last = log->caps[c].id;
  size_t w = (size_t)last + 1;
  long *at = cg_xrealloc(NULL, v->n * w * sizeof *at, DOING); /* rank i's capture of id k: at[i * w + k] */
  for (size_t k = 0; k < v->n * w; k++)
    at[k] = -1;
  for (size_t c = 0; c < log->n_caps; c++)
    for (size_t i = 0; i < v->n; i++)
      if (log->caps[c].proc == v->rows[i].proc && log->caps[c].id >= 1 && log->caps[c].id <= last)
        at[i * w + (size_t)log->caps[c].id] = (long)c;
  bool *broke = cg_xrealloc(NULL, v->n * sizeof *broke, DOING);
  bool *made = cg_xrealloc(NULL, v->n * sizeof *made, DOING);
  for (size_t id = 1; id < w; id++) {
    size_t n_broke = 0, n_made = 0;
    for (size_t i = 0; i < v->n; i++) {
      long c = at[i * w + id];
      broke[i] = c >= 0 && cg_capture_status_broken(log->caps[c].status);
      made[i] = c >= 0 && log->caps[c].status == CG_CAPTURE_ENDED;
      n_broke += broke[i];
      n_made += made[i];
    }
    if (!n_broke || !n_made)
      continue;
    for (size_t i = 0; i < v->n; i++) {
      if (!broke[i])
        continue;
      char off[384], others[256];
      offender_short(log, (size_t)at[i * w + id], off, sizeof off);
      rank_list(v, made, others, sizeof others);
      add_diff(v, "rank %lld broke capture %zu (first offender %s); %s captured it", v->rows[i].rank, id, off,
               others);
    }
  }
  free(at);
  free(broke);
  free(made);
}

void cgr_rank_view_build(const cgl_log *log, cgr_rank_view *v) {
  memset(v, 0, sizeof *v);
  for (size_t p = 0; p < log->n_procs; p++) {
    const cgl_process *pr = &log->procs[p];
    if (!pr->rank_known)
      continue;
    size_t began = 0, captured = 0, broken = 0;
    long first = -1;
    for (size_t c = 0; c < log->n_caps; c++) {
      const cgl_capture *cap = &log->caps[c];
      if (cap->proc != p)
        continue;
      began++;
      captured += cap->status == CG_CAPTURE_ENDED;
      if (cg_capture_status_broken(cap->status)) {
        broken++;
        if (first < 0 || cap->id < log->caps[first].id)
          first = (long)c;
      }
    }
    /* a rank's helpers (compiler workers) inherit its variables and begin
     * no capture: folded into the rank's process. Two processes of one rank
     * that both began captures each keep a row (a stale RANK). */
    size_t i = 0;
    while (i < v->n && !(v->rows[i].rank == pr->rank && (!v->rows[i].captures || !began)))
      i++;
    if (i < v->n && v->rows[i].captures >= began)
      continue;
    if (i == v->n)
      v->rows = cg_xrealloc(v->rows, ++v->n * sizeof *v->rows, DOING);
    cgr_rank_row *r = &v->rows[i];
    *r = (cgr_rank_row){.rank = pr->rank, .world_size = pr->world_size, .proc = p, .captures = began,
                        .captured = captured, .broken = broken, .first_broken = first};
    if (first >= 0)
      offender_short(log, (size_t)first, r->offender, sizeof r->offender);
  }
  if (v->n < 2)
    return;
  qsort(v->rows, v->n, sizeof *v->rows, by_rank);
  for (size_t i = 0; i < v->n; i++)
    v->any_broken = v->any_broken || v->rows[i].broken;
  claim_differences(log, v);
  count_differences(v);
  capture_differences(log, v);
}

void cgr_rank_view_free(cgr_rank_view *v) {
  for (size_t i = 0; i < v->n_diffs; i++)
    free(v->diffs[i]);
  free(v->diffs);
  free(v->rows);
  memset(v, 0, sizeof *v);
}
