#include "rank_view.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_display.h"
#include "plural.h"
#include "offender.h"
#include "xalloc.h"

#define MAX_DIFFS 8 /* sentences kept; the rest are counted */
#define DOING "comparing the ranks"
#define MAX_ID 100000     /* captures compared a rank: past that, only the counts */
#define NO_ROW UINT32_MAX /* row_of's: the process has no row */

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
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", first ? " " : ", ",
                            cgr_rank_row_rank(v, &v->rows[i]));
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
                              cgr_rank_row_rank(v, &v->rows[i]), pass == 0 ? "captured" : "began", n,
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
    if (i > 0 && cgr_rank_row_rank(v, &v->rows[i - 1]) == cgr_rank_row_rank(v, &v->rows[i]))
      continue;
    size_t n = 1, len = 0;
    char pids[256] = "";
    len += (size_t)snprintf(pids, sizeof pids, "%lld", log->procs[v->rows[i].proc].pid);
    for (size_t j = i + 1; j < v->n && cgr_rank_row_rank(v, &v->rows[j]) == cgr_rank_row_rank(v, &v->rows[i]);
         j++, n++)
      if (len < sizeof pids)
        len += (size_t)snprintf(pids + len, sizeof pids - len, ", %lld", log->procs[v->rows[j].proc].pid);
    if (n > 1)
      add_diff(v, "rank %lld is claimed by %zu processes that captured (pids %s)",
               cgr_rank_row_rank(v, &v->rows[i]), n, pids);
  }
}

/* Each capture id some rank broke and another captured (a capture's id is
 * its process's count of begins: the same step on every rank). row_of: each
 * process's row, or NO_ROW. Linear in the captures, and in the ranks
 * times the ids compared, which MAX_CELLS bounds. */
#define MAX_CELLS (1 << 24)
static void capture_differences(const cgl_log *log, cgr_rank_view *v, const uint32_t *row_of) {
  long long last = 0;
  for (size_t c = 0; c < log->n_caps; c++)
    if (row_of[log->caps[c].proc] != NO_ROW && log->caps[c].id > last && log->caps[c].id <= MAX_ID)
      last = log->caps[c].id;
  if ((size_t)last + 1 > MAX_CELLS / v->n) /* a job of very many ranks: its first steps only */
    last = (long long)(MAX_CELLS / v->n) - 1;
  size_t w = (size_t)last + 1;
  /* rank i's capture of id k: at[i * w + k], 4 bytes (fewer than 2^31 captures, log_reader.h) */
  int32_t *at = cg_xrealloc(NULL, v->n * w * sizeof *at, DOING);
  for (size_t k = 0; k < v->n * w; k++)
    at[k] = -1;
  for (size_t c = 0; c < log->n_caps; c++) {
    size_t i = row_of[log->caps[c].proc];
    if (i != NO_ROW && log->caps[c].id >= 1 && log->caps[c].id <= last)
      at[i * w + (size_t)log->caps[c].id] = (int32_t)c;
  }
  bool *broke = cg_xrealloc(NULL, v->n * sizeof *broke, DOING);
  bool *made = cg_xrealloc(NULL, v->n * sizeof *made, DOING);
  for (size_t id = 1; id < w; id++) {
    size_t n_broke = 0, n_made = 0;
    for (size_t i = 0; i < v->n; i++) {
      int32_t c = at[i * w + id];
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
      if (v->n_diffs == MAX_DIFFS) { /* counted, not worded: wording costs a pass over the ranks */
        v->more_diffs++;
        continue;
      }
      char off[384], others[256];
      offender_short(log, (size_t)at[i * w + id], off, sizeof off);
      rank_list(v, made, others, sizeof others);
      add_diff(v, "rank %lld broke capture %zu (first offender %s); %s captured it",
               cgr_rank_row_rank(v, &v->rows[i]), id, off, others);
    }
  }
  free(at);
  free(broke);
  free(made);
}

/* The loads of images ranks made during capture (module-load events: the
 * driver's load or a copy served) are sorted as their events' indices, 4
 * bytes each (with qsort's copy, the report's peak at a million ranks),
 * by image hash (interned: equal hashes are one pointer), then row, then
 * the event (a group's first load is its earliest of the lowest row,
 * whatever qsort's stability). */
typedef struct {
  const cgl_event *evs;
  const uint32_t *row_of;
} loads_ctx;
static int by_hash_then_row(const void *a, const void *b, void *ctx) {
  const loads_ctx *c = ctx;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  const char *hx = c->evs[x].image_hash, *hy = c->evs[y].image_hash;
  if (hx != hy)
    return (uintptr_t)hx < (uintptr_t)hy ? -1 : 1;
  uint32_t rx = c->row_of[c->evs[x].proc], ry = c->row_of[c->evs[y].proc];
  if (rx != ry)
    return rx < ry ? -1 : 1;
  return (x > y) - (x < y);
}

static bool loaded_during_capture(const cgl_event *ev, const uint32_t *row_of) {
  return ev->kind == CG_EV_MODULE_LOAD && ev->image_hash && row_of[ev->proc] != NO_ROW;
}

/* Each image some ranks loaded during capture and others did not: NCCL's
 * ranks run the same graphs, so a rank that loaded another kernel image
 * captured other work (a different code path, a different build). */
static void image_differences(const cgl_log *log, cgr_rank_view *v, const uint32_t *row_of) {
  size_t n = 0;
  for (size_t e = 0; e < log->n_evs; e++)
    n += loaded_during_capture(&log->evs[e], row_of);
  uint32_t *li = cg_xrealloc(NULL, (n + 1) * sizeof *li, DOING);
  n = 0;
  for (size_t e = 0; e < log->n_evs; e++)
    if (loaded_during_capture(&log->evs[e], row_of))
      li[n++] = (uint32_t)e;
  loads_ctx ctx = {log->evs, row_of};
  if (n)
    qsort_r(li, n, sizeof *li, by_hash_then_row, &ctx);
#define HASH(k) (log->evs[li[k]].image_hash)
#define ROW(k) (row_of[log->evs[li[k]].proc])
  /* Linear in the loads: a group's ranks are counted from the sorted run
   * (rows ascending, so a repeat is the previous one); only the groups
   * worded (MAX_DIFFS) pay a pass over every rank. A million ranks each
   * with an image of its own would otherwise cost a million passes. */
  bool *has = NULL, *lacks = NULL;
  for (size_t i = 0; i < n;) {
    size_t j = i, n_has = 0;
    for (; j < n && HASH(j) == HASH(i); j++)
      n_has += j == i || ROW(j) != ROW(j - 1);
    if (n_has < v->n && v->n_diffs == MAX_DIFFS) {
      v->more_diffs++;
    } else if (n_has < v->n) {
      if (!has) {
        has = cg_xrealloc(NULL, v->n * sizeof *has, DOING);
        lacks = cg_xrealloc(NULL, v->n * sizeof *lacks, DOING);
      }
      memset(has, 0, v->n * sizeof *has);
      for (size_t k = i; k < j; k++)
        has[ROW(k)] = true;
      for (size_t r = 0; r < v->n; r++)
        lacks[r] = !has[r];
      const cgl_event *ev = &log->evs[li[i]];
      char with[256], without[256], disp[CG_KERNEL_DISPLAY_MAX];
      const char *k = ev->kernels->n ? cg_kernel_display(ev->kernels->v[0], disp, sizeof disp) : NULL;
      rank_list(v, has, with, sizeof with);
      rank_list(v, lacks, without, sizeof without);
      add_diff(v, "%s loaded an image during capture that %s did not (hash %.16s%s%s%s)", with, without,
               HASH(i), k ? ", kernel " : "", k ? k : "", ev->kernels->n > 1 ? " and more" : "");
    }
    i = j;
  }
#undef HASH
#undef ROW
  free(li);
  free(has);
  free(lacks);
}

/* The processes with a rank by rank, then the process that began most first:
 * a rank's helpers (compiler workers) inherit its variables and begin no
 * capture. Their indices are sorted, 4 bytes each, not the rows (qsort's
 * copy of a million 48-byte rows was the report's peak); the captures each
 * began are the analysis's counts, not gathered again. */
typedef struct {
  const cgl_process *procs;
  const struct cgr_proc_stats *st;
} rank_order;
static int by_rank_then_began(const void *a, const void *b, void *ctx) {
  const rank_order *o = ctx;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  long long rx = cgl_process_num(&o->procs[x], CGL_PR_RANK), ry = cgl_process_num(&o->procs[y], CGL_PR_RANK);
  if (rx != ry)
    return (rx > ry) - (rx < ry);
  if (o->st[x].seen != o->st[y].seen)
    return o->st[x].seen < o->st[y].seen ? 1 : -1;
  return (x > y) - (x < y);
}

/* The rows: of each rank its process that began most; two that both began
 * captures each keep a row (a stale RANK); helpers that began none are
 * folded in. Their counts are zero (count_captures fills them). */
static void make_rows(const cgl_log *log, size_t n_known, const struct cgr_proc_stats *st, cgr_rank_view *v) {
  uint32_t *order = cg_xrealloc(NULL, n_known * sizeof *order, DOING);
  size_t n = 0;
  for (size_t p = 0; p < log->n_procs; p++)
    if (log->procs[p].rank_known)
      order[n++] = (uint32_t)p;
  rank_order ctx = {log->procs, st};
  qsort_r(order, n, sizeof *order, by_rank_then_began, &ctx);
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    bool same_rank = kept && cgl_process_num(&log->procs[order[kept - 1]], CGL_PR_RANK) ==
                                 cgl_process_num(&log->procs[order[i]], CGL_PR_RANK);
    if (same_rank && !st[order[i]].seen)
      continue;
    order[kept++] = order[i];
  }
  v->rows = cg_xrealloc(NULL, (kept + 1) * sizeof *v->rows, DOING);
  for (size_t i = 0; i < kept; i++)
    v->rows[i] = (cgr_rank_row){.proc = order[i], .first_broken = -1};
  v->n = kept;
  free(order);
}

/* The rows' counts of captures, in one pass over them (row_of: each
 * process's row, or NO_ROW). */
static void count_captures(const cgl_log *log, cgr_rank_view *v, const uint32_t *row_of) {
  for (size_t c = 0; c < log->n_caps; c++) {
    const cgl_capture *cap = &log->caps[c];
    if (row_of[cap->proc] == NO_ROW)
      continue;
    cgr_rank_row *k = &v->rows[row_of[cap->proc]];
    k->captures++;
    k->captured += cap->status == CG_CAPTURE_ENDED;
    if (cg_capture_status_broken(cap->status)) {
      k->broken++;
      if (k->first_broken < 0 || cap->id < log->caps[k->first_broken].id)
        k->first_broken = (int32_t)c;
    }
  }
}

void cgr_rank_view_build(const cgl_log *log, const struct cgr_proc_stats *st, cgr_rank_view *v) {
  memset(v, 0, sizeof *v);
  v->procs = log->procs;
  v->log = log;
  size_t n_known = 0;
  for (size_t p = 0; p < log->n_procs; p++)
    n_known += log->procs[p].rank_known;
  if (n_known < 2)
    return;
  make_rows(log, n_known, st, v);
  if (v->n < 2)
    return;
  uint32_t *row_of = cg_xrealloc(NULL, log->n_procs * sizeof *row_of, DOING);
  for (size_t p = 0; p < log->n_procs; p++)
    row_of[p] = NO_ROW;
  for (size_t i = 0; i < v->n; i++)
    row_of[v->rows[i].proc] = (uint32_t)i;
  count_captures(log, v, row_of);
  for (size_t i = 0; i < v->n; i++)
    v->any_broken = v->any_broken || v->rows[i].broken;
  claim_differences(log, v);
  count_differences(v);
  capture_differences(log, v, row_of);
  image_differences(log, v, row_of);
  free(row_of);
}

void cgr_rank_row_offender(const cgr_rank_view *v, const cgr_rank_row *r, char *buf, size_t cap) {
  if (r->first_broken < 0) {
    if (cap)
      buf[0] = '\0';
    return;
  }
  /* the buffer the rows once kept their offenders in: the same words, cut alike */
  char off[384];
  offender_short(v->log, (size_t)r->first_broken, off, sizeof off);
  snprintf(buf, cap, "%s", off);
}

void cgr_rank_view_free(cgr_rank_view *v) {
  for (size_t i = 0; i < v->n_diffs; i++)
    free(v->diffs[i]);
  free(v->diffs);
  free(v->rows);
  memset(v, 0, sizeof *v);
}
