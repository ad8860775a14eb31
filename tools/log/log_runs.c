/* Runs in a log: which processes belong to one `capguard run` or one
 * top-level command, so that a log holding run 1 (broken) and run 2 (primed)
 * is judged by the run that counts, and each can be shown on its own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log_pool.h"
#include "log_reader.h"

enum { BY_PID = 0, RUN_BY_ID = 2 };
#define SLACK_NS 1000000000LL /* lifetimes this close overlap: one run's siblings */

#define NONE UINT32_MAX /* root's and group's: not known yet */

/* The top-level process of p's run (by ppid within its file), memoised in
 * root: 4-byte indices (a log holds fewer than 2^31 processes,
 * log_reader.h), as grouping a million processes' runs happens while the
 * reader's index is still held. */
static size_t root_of(cgl_log *log, size_t p, uint32_t *root) {
  size_t chain[64], n = 0, cur = p;
  while (root[cur] == NONE && n < 64) {
    chain[n++] = cur;
    const cgl_process *c = &log->procs[cur];
    long parent = c->run ? -1 : cgl_index_get(log->index, BY_PID, (long long)c->file, c->ppid, cgl_log_key, log);
    /* A parent is one that started before its child; a later process that reused the pid is not. */
    if (parent < 0 || (size_t)parent == cur || (log->procs[parent].first_ns > c->first_ns + SLACK_NS &&
                                                 c->first_ns))
      break;
    cur = (size_t)parent;
  }
  size_t r = root[cur] != NONE ? root[cur] : cur;
  for (size_t i = 0; i < n; i++)
    root[chain[i]] = (uint32_t)r;
  return r;
}

/* A run id's key in the index of runs by id: the group's run id (ctx: the groups' ids). */
static void run_key(const void *ctx, int t, size_t value, long long *a, long long *b) {
  (void)t;
  *a = (long long)(uintptr_t)((const char *const *)ctx)[value];
  *b = 0;
}

static const cgl_log *sort_log;
static int by_parent_then_time(const void *a, const void *b) {
  const cgl_process *x = &sort_log->procs[*(const uint32_t *)a], *y = &sort_log->procs[*(const uint32_t *)b];
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  if (x->ppid != y->ppid) return x->ppid < y->ppid ? -1 : 1;
  if (x->first_ns != y->first_ns) return x->first_ns < y->first_ns ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}
static int run_by_time(const void *a, const void *b) {
  const cgl_run *x = a, *y = b;
  if (x->first_ns != y->first_ns) return x->first_ns < y->first_ns ? -1 : 1;
  return x->first_proc < y->first_proc ? -1 : x->first_proc > y->first_proc;
}

void cgl_group_runs(cgl_log *log) {
  cgl_unseal(log); /* its parents are found by pid */
  size_t np = log->n_procs;
  free(log->runs);
  log->runs = NULL;
  log->n_runs = 0;
  if (!np)
    return;
  uint32_t *root = cgl_xrealloc(NULL, np * sizeof *root);
  uint32_t *group = cgl_xrealloc(NULL, np * sizeof *group);
  uint32_t *roots = cgl_xrealloc(NULL, np * sizeof *roots);
  for (size_t p = 0; p < np; p++)
    root[p] = group[p] = NONE;
  size_t nroots = 0, ngroups = 0, cap_ids = 0;
  struct cgl_index *by_id = cgl_index_new();
  const char **ids = NULL; /* each run id's group, grown as they come (a job is one) */
  for (size_t p = 0; p < np; p++) {
    const cgl_process *pr = &log->procs[p];
    if (pr->run) { /* capguard run named it: one group per run id */
      long g = cgl_index_get(by_id, RUN_BY_ID, (long long)(uintptr_t)pr->run, 0, run_key, ids);
      if (g < 0) {
        if (ngroups == cap_ids) {
          cap_ids = cap_ids ? 2 * cap_ids : 16;
          ids = cgl_xrealloc(ids, cap_ids * sizeof *ids);
        }
        g = (long)ngroups++;
        ids[g] = pr->run;
        cgl_index_put(by_id, RUN_BY_ID, (long long)(uintptr_t)pr->run, 0, (size_t)g, run_key, ids);
      }
      group[p] = (uint32_t)g;
      root[p] = (uint32_t)p;
    } else if (root_of(log, p, root) == p) {
      roots[nroots++] = (uint32_t)p;
    }
  }
  cgl_index_free(by_id);
  free(ids);
  /* Top-level processes of one file with the same parent whose lifetimes
   * overlap were started together (workers of a parent that did not log). */
  sort_log = log;
  if (nroots)
    qsort(roots, nroots, sizeof *roots, by_parent_then_time);
  long long end = 0;
  for (size_t i = 0; i < nroots; i++) {
    const cgl_process *pr = &log->procs[roots[i]], *prev = i ? &log->procs[roots[i - 1]] : NULL;
    bool together = prev && prev->file == pr->file && prev->ppid == pr->ppid && pr->ppid > 1 &&
                    pr->first_ns <= end + SLACK_NS;
    group[roots[i]] = together ? group[roots[i - 1]] : (uint32_t)ngroups++;
    end = together && end > pr->last_ns ? end : pr->last_ns;
  }
  for (size_t p = 0; p < np; p++)
    if (group[p] == NONE)
      group[p] = group[root[p]] != NONE ? group[root[p]] : group[root_of(log, p, root)];
  cgl_run *runs = cgl_xrealloc(NULL, ngroups * sizeof *runs);
  for (size_t g = 0; g < ngroups; g++)
    runs[g] = (cgl_run){SIZE_MAX, 0, 0, 0};
  for (size_t p = 0; p < np; p++) {
    cgl_run *r = &runs[group[p]];
    const cgl_process *pr = &log->procs[p];
    long long t0 = pr->first_ns ? pr->first_ns : pr->last_ns;
    if (r->first_proc == SIZE_MAX || (t0 && (!r->first_ns || t0 < r->first_ns))) {
      r->first_proc = p;
      r->first_ns = t0;
    }
    if (pr->last_ns > r->last_ns)
      r->last_ns = pr->last_ns;
    r->n_procs++;
  }
  qsort(runs, ngroups, sizeof *runs, run_by_time);
  /* group numbers -> positions after sorting */
  size_t *pos = cgl_xrealloc(NULL, ngroups * sizeof *pos);
  for (size_t g = 0; g < ngroups; g++)
    pos[group[runs[g].first_proc]] = g;
  for (size_t p = 0; p < np; p++)
    log->procs[p].run_index = pos[group[p]];
  log->runs = runs;
  log->n_runs = ngroups;
  free(pos);
  free(root);
  free(group);
  free(roots);
}

/* The items of one kind (processes, captures, calls, stale events, request-path
 * loads, hangs) bucketed by run, each bucket in the log's order: run r's are
 * items[start[r] .. start[r + 1]), and an item's place in its run's is found
 * there by bisection (local_of). Built once in time linear in the log, so
 * that every run's view costs its own size, not the whole log's; items 4
 * bytes each (a log holds fewer than 2^31 items of a kind, log_reader.h),
 * as they are built for every capture and call of the log at once. */
typedef struct {
  size_t *start;
  uint32_t *items;
} run_bucket;

/* Item i's place among run's items of b (it is one of them). */
static uint32_t local_of(const run_bucket *b, size_t run, size_t i) {
  size_t lo = b->start[run], hi = b->start[run + 1];
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (b->items[mid] <= i)
      lo = mid;
    else
      hi = mid;
  }
  return (uint32_t)(lo - b->start[run]);
}
enum { ITEM_PROC, ITEM_CAPTURE, ITEM_EVENT, ITEM_STALE, ITEM_REQUEST, ITEM_HANG, ITEM_KINDS };

static size_t item_proc(const cgl_log *log, int kind, size_t i) {
  switch (kind) {
  case ITEM_PROC: return i;
  case ITEM_CAPTURE: return log->caps[i].proc;
  case ITEM_EVENT: return log->evs[i].proc;
  case ITEM_STALE: return log->stale[i].proc;
  case ITEM_HANG: return log->hangs[i].proc;
  default: return log->reqs[i].proc;
  }
}

static void bucket_fill(const cgl_log *log, int kind, size_t n, run_bucket *b) {
  size_t nr = log->n_runs;
  b->start = cgl_xrealloc(NULL, (nr + 1) * sizeof *b->start);
  memset(b->start, 0, (nr + 1) * sizeof *b->start);
  b->items = cgl_xrealloc(NULL, (n + 1) * sizeof *b->items);
  for (size_t i = 0; i < n; i++)
    b->start[log->procs[item_proc(log, kind, i)].run_index + 1]++;
  for (size_t r = 1; r <= nr; r++)
    b->start[r] += b->start[r - 1];
  size_t *next = cgl_xrealloc(NULL, (nr + 1) * sizeof *next); /* each run's next free place */
  memcpy(next, b->start, (nr + 1) * sizeof *next);
  for (size_t i = 0; i < n; i++) {
    size_t r = log->procs[item_proc(log, kind, i)].run_index;
    b->items[next[r]++] = (uint32_t)i;
  }
  free(next);
}

static void buckets_free(run_bucket *b) {
  for (int k = 0; k < ITEM_KINDS; k++) {
    free(b[k].start);
    free(b[k].items);
  }
}

static void buckets_fill(const cgl_log *log, run_bucket *b) {
  size_t n[ITEM_KINDS] = {log->n_procs, log->n_caps, log->n_evs, log->n_stale, log->n_reqs, log->n_hangs};
  for (int k = 0; k < ITEM_KINDS; k++)
    bucket_fill(log, k, n[k], &b[k]);
}

/* An array of run's items of one kind, copied from src (elements of size elem). */
static void *run_items(const run_bucket *b, size_t run, bool in_log, const void *src, size_t elem,
                       size_t *n) {
  *n = in_log ? b->start[run + 1] - b->start[run] : 0;
  char *dst = cgl_xrealloc(NULL, (*n + 1) * elem);
  for (size_t k = 0; k < *n; k++)
    memcpy(dst + k * elem, (const char *)src + b->items[b->start[run] + k] * elem, elem);
  return dst;
}

static void view_of(const cgl_log *log, const run_bucket *b, size_t run, cgl_log *view) {
  memset(view, 0, sizeof *view);
  view->is_view = true;
  view->files = log->files;
  view->n_files = log->n_files;
  view->pool = log->pool;
  view->index = cgl_index_new();
  view->lines = log->lines;
  view->records = log->records;
  view->malformed = log->malformed;
  view->newer = log->newer;
  view->cut_files = log->cut_files;
  view->unknown = log->unknown;
  memcpy(view->first_malformed, log->first_malformed, sizeof view->first_malformed);
  bool in = run < log->n_runs; /* else an empty view, as of a run that is not there */
  const run_bucket *pb = &b[ITEM_PROC];
  view->procs = run_items(&b[ITEM_PROC], run, in, log->procs, sizeof *log->procs, &view->n_procs);
  for (size_t p = 0; p < view->n_procs; p++)
    view->procs[p].run_index = 0;
  view->caps = run_items(&b[ITEM_CAPTURE], run, in, log->caps, sizeof *log->caps, &view->n_caps);
  for (size_t c = 0; c < view->n_caps; c++) {
    view->caps[c].proc = local_of(pb, run, view->caps[c].proc);
    if (view->caps[c].first_break >= 0) /* an event of its own process: of this run */
      view->caps[c].first_break = (int32_t)local_of(&b[ITEM_EVENT], run, (size_t)view->caps[c].first_break);
  }
  view->evs = run_items(&b[ITEM_EVENT], run, in, log->evs, sizeof *log->evs, &view->n_evs);
  for (size_t i = 0; i < view->n_evs; i++) {
    cgl_event *e = &view->evs[i];
    e->proc = local_of(pb, run, e->proc);
    e->capture = local_of(&b[ITEM_CAPTURE], run, e->capture);
  }
  view->stale = run_items(&b[ITEM_STALE], run, in, log->stale, sizeof *log->stale, &view->n_stale);
  for (size_t i = 0; i < view->n_stale; i++)
    view->stale[i].proc = local_of(pb, run, view->stale[i].proc);
  view->reqs = run_items(&b[ITEM_REQUEST], run, in, log->reqs, sizeof *log->reqs, &view->n_reqs);
  for (size_t i = 0; i < view->n_reqs; i++)
    view->reqs[i].proc = local_of(pb, run, view->reqs[i].proc);
  view->hangs = run_items(&b[ITEM_HANG], run, in, log->hangs, sizeof *log->hangs, &view->n_hangs);
  for (size_t i = 0; i < view->n_hangs; i++)
    view->hangs[i].proc = local_of(pb, run, view->hangs[i].proc);
  view->cap_procs = view->n_procs;
  view->cap_caps = view->n_caps;
  view->cap_evs = view->n_evs;
  view->cap_stale = view->n_stale;
  view->cap_reqs = view->n_reqs;
  view->cap_hangs = view->n_hangs;
  if (in) {
    view->runs = cgl_xrealloc(NULL, sizeof *view->runs);
    view->runs[0] = log->runs[run];
    view->runs[0].first_proc = local_of(pb, run, log->runs[run].first_proc);
    view->n_runs = 1;
  }
}

void cgl_view(const cgl_log *log, size_t run, cgl_log *view) {
  run_bucket b[ITEM_KINDS];
  buckets_fill(log, b);
  view_of(log, b, run, view);
  buckets_free(b);
}

void cgl_each_run(const cgl_log *log, void (*fn)(const cgl_log *view, size_t run, void *ctx), void *ctx) {
  run_bucket b[ITEM_KINDS];
  buckets_fill(log, b);
  for (size_t r = 0; r < log->n_runs; r++) {
    cgl_log view;
    view_of(log, b, r, &view);
    fn(&view, r, ctx);
    cgl_free(&view);
  }
  buckets_free(b);
}
