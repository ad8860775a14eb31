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

/* The top-level process of p's run (by ppid within its file), memoised in root. */
static size_t root_of(cgl_log *log, size_t p, size_t *root) {
  size_t chain[64], n = 0, cur = p;
  while (root[cur] == SIZE_MAX && n < 64) {
    chain[n++] = cur;
    const cgl_process *c = &log->procs[cur];
    long parent = c->run ? -1 : cgl_index_get(log->index, BY_PID, (long long)c->file, c->ppid);
    /* A parent is one that started before its child; a later process that reused the pid is not. */
    if (parent < 0 || (size_t)parent == cur || (log->procs[parent].first_ns > c->first_ns + SLACK_NS &&
                                                 c->first_ns))
      break;
    cur = (size_t)parent;
  }
  size_t r = root[cur] != SIZE_MAX ? root[cur] : cur;
  for (size_t i = 0; i < n; i++)
    root[chain[i]] = r;
  return r;
}

static const cgl_log *sort_log;
static int by_parent_then_time(const void *a, const void *b) {
  const cgl_process *x = &sort_log->procs[*(const size_t *)a], *y = &sort_log->procs[*(const size_t *)b];
  if (x->file != y->file) return x->file < y->file ? -1 : 1;
  if (x->ppid != y->ppid) return x->ppid < y->ppid ? -1 : 1;
  if (x->first_ns != y->first_ns) return x->first_ns < y->first_ns ? -1 : 1;
  return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}
static int run_by_time(const void *a, const void *b) {
  const cgl_run *x = a, *y = b;
  if (x->first_ns != y->first_ns) return x->first_ns < y->first_ns ? -1 : 1;
  return x->first_proc < y->first_proc ? -1 : x->first_proc > y->first_proc;
}

void cgl_group_runs(cgl_log *log) {
  size_t np = log->n_procs;
  free(log->runs);
  log->runs = NULL;
  log->n_runs = 0;
  if (!np)
    return;
  size_t *root = cgl_xrealloc(NULL, np * sizeof *root);
  size_t *group = cgl_xrealloc(NULL, np * sizeof *group);
  size_t *roots = cgl_xrealloc(NULL, np * sizeof *roots);
  for (size_t p = 0; p < np; p++)
    root[p] = group[p] = SIZE_MAX;
  size_t nroots = 0, ngroups = 0;
  for (size_t p = 0; p < np; p++) {
    const cgl_process *pr = &log->procs[p];
    if (pr->run) { /* capguard run named it: one group per run id */
      long g = cgl_index_get(log->index, RUN_BY_ID, (long long)(uintptr_t)pr->run, 0);
      if (g < 0) {
        g = (long)ngroups++;
        cgl_index_put(log->index, RUN_BY_ID, (long long)(uintptr_t)pr->run, 0, (size_t)g);
      }
      group[p] = (size_t)g;
      root[p] = p;
    } else if (root_of(log, p, root) == p) {
      roots[nroots++] = p;
    }
  }
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
    group[roots[i]] = together ? group[roots[i - 1]] : ngroups++;
    end = together && end > pr->last_ns ? end : pr->last_ns;
  }
  for (size_t p = 0; p < np; p++)
    if (group[p] == SIZE_MAX)
      group[p] = group[root[p]] != SIZE_MAX ? group[root[p]] : group[root_of(log, p, root)];
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

void cgl_view(const cgl_log *log, size_t run, cgl_log *view) {
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
  size_t *pmap = cgl_xrealloc(NULL, (log->n_procs + 1) * sizeof *pmap);
  size_t *cmap = cgl_xrealloc(NULL, (log->n_caps + 1) * sizeof *cmap);
  size_t *emap = cgl_xrealloc(NULL, (log->n_evs + 1) * sizeof *emap);
  view->procs = cgl_xrealloc(NULL, (log->n_procs + 1) * sizeof *view->procs);
  for (size_t p = 0; p < log->n_procs; p++) {
    pmap[p] = SIZE_MAX;
    if (log->procs[p].run_index == run) {
      pmap[p] = view->n_procs;
      view->procs[view->n_procs] = log->procs[p];
      view->procs[view->n_procs++].run_index = 0;
    }
  }
  view->caps = cgl_xrealloc(NULL, (log->n_caps + 1) * sizeof *view->caps);
  for (size_t c = 0; c < log->n_caps; c++) {
    cmap[c] = SIZE_MAX;
    if (pmap[log->caps[c].proc] != SIZE_MAX) {
      cmap[c] = view->n_caps;
      view->caps[view->n_caps] = log->caps[c];
      view->caps[view->n_caps++].proc = pmap[log->caps[c].proc];
    }
  }
  view->evs = cgl_xrealloc(NULL, (log->n_evs + 1) * sizeof *view->evs);
  for (size_t i = 0; i < log->n_evs; i++) {
    emap[i] = SIZE_MAX;
    if (pmap[log->evs[i].proc] != SIZE_MAX) {
      emap[i] = view->n_evs;
      cgl_event *e = &view->evs[view->n_evs];
      *e = log->evs[i];
      e->proc = pmap[e->proc];
      e->capture = cmap[e->capture];
      e->seq = view->n_evs++;
    }
  }
  view->stale = cgl_xrealloc(NULL, (log->n_stale + 1) * sizeof *view->stale);
  for (size_t i = 0; i < log->n_stale; i++)
    if (pmap[log->stale[i].proc] != SIZE_MAX) {
      view->stale[view->n_stale] = log->stale[i];
      view->stale[view->n_stale++].proc = pmap[log->stale[i].proc];
    }
  view->cap_stale = view->n_stale;
  view->hangs = cgl_xrealloc(NULL, (log->n_hangs + 1) * sizeof *view->hangs);
  for (size_t i = 0; i < log->n_hangs; i++)
    if (pmap[log->hangs[i].proc] != SIZE_MAX) {
      view->hangs[view->n_hangs] = log->hangs[i];
      view->hangs[view->n_hangs++].proc = pmap[log->hangs[i].proc];
    }
  view->cap_hangs = view->n_hangs;
  view->reqs = cgl_xrealloc(NULL, (log->n_reqs + 1) * sizeof *view->reqs);
  for (size_t i = 0; i < log->n_reqs; i++)
    if (pmap[log->reqs[i].proc] != SIZE_MAX) {
      view->reqs[view->n_reqs] = log->reqs[i];
      view->reqs[view->n_reqs++].proc = pmap[log->reqs[i].proc];
    }
  view->cap_reqs = view->n_reqs;
  for (size_t c = 0; c < view->n_caps; c++)
    if (view->caps[c].first_break >= 0)
      view->caps[c].first_break = (long)emap[view->caps[c].first_break];
  view->cap_procs = view->n_procs;
  view->cap_caps = view->n_caps;
  view->cap_evs = view->n_evs;
  if (run < log->n_runs) {
    view->runs = cgl_xrealloc(NULL, sizeof *view->runs);
    view->runs[0] = log->runs[run];
    view->runs[0].first_proc = pmap[log->runs[run].first_proc];
    view->n_runs = 1;
  }
  free(pmap);
  free(cmap);
  free(emap);
}
