/* hang_lineup.h. A graph is told across ranks by where its capture began
 * and its capture number: ranks of one job capture the same graphs in the
 * same order. Each rank's launches of it are the most any of its events
 * says (a launch-count, written when the rank went quiet, or the launch it
 * hung in). */
#include "hang_lineup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_pool.h"

void cgm_hang_who(const cgl_log *log, size_t proc, char *buf, size_t cap) {
  const cgl_process *p = &log->procs[proc];
  if (p->rank_known)
    snprintf(buf, cap, "rank %lld", cgl_process_num(p, CGL_PR_RANK));
  else
    snprintf(buf, cap, "pid %lld", p->pid);
}

static bool same_graph(const cgl_hang *a, const cgl_hang *b) {
  return a->capture_id == b->capture_id && strcmp(a->began, b->began) == 0;
}

static bool counts(const cgl_hang *h) {
  return h->kind == CG_EV_HANG_LAUNCH || h->kind == CG_EV_LAUNCH_COUNT;
}

/* Each process's launches of the graph of hung: the most its events say. */
static long long launches_of(const cgl_log *log, size_t proc, const cgl_hang *hung) {
  long long n = -1;
  for (size_t i = 0; i < log->n_hangs; i++) {
    const cgl_hang *h = &log->hangs[i];
    if (h->proc == proc && counts(h) && same_graph(h, hung) && h->launches > n)
      n = h->launches;
  }
  return n;
}

static char *dup_text(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = cgl_xrealloc(NULL, n);
  memcpy(d, s, n);
  return d;
}

/* Processes by rank (an unknown rank last), then pid. */
static const cgl_log *by_rank_log;
static int by_rank(const void *a, const void *b) {
  const cgl_process *x = &by_rank_log->procs[*(const size_t *)a],
                    *y = &by_rank_log->procs[*(const size_t *)b];
  if (x->rank_known != y->rank_known)
    return x->rank_known ? -1 : 1;
  if (x->rank_known && cgl_process_num(x, CGL_PR_RANK) != cgl_process_num(y, CGL_PR_RANK))
    return cgl_process_num(x, CGL_PR_RANK) < cgl_process_num(y, CGL_PR_RANK) ? -1 : 1;
  return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The sentence for the first hung launch of its graph in process hung->proc. */
static cgm_lineup one(const cgl_log *log, const cgl_hang *hung) {
  char who[64], graph[600], text[2048];
  cgm_hang_who(log, hung->proc, who, sizeof who);
  snprintf(graph, sizeof graph, "the graph captured at %s (capture %lld)",
           *hung->began ? hung->began : "an unknown site", hung->capture_id);
  cgm_lineup l = {NULL, -1, hung->collectives == 0 && hung->kernel_nodes > 0};
  if (l.busy) {
    snprintf(
        text, sizeof text,
        "%s is busy in launch %lld of %s: no collective is in it, so it waits for no peer (its own kernels "
        "run on)",
        who, hung->launches, graph);
    l.text = dup_text(text);
    return l;
  }
  /* every process's launches of it, by rank */
  size_t n = 0;
  int at = snprintf(text, sizeof text, "%s: ", graph);
  long long fewest = hung->launches;
  size_t *order = cgl_xrealloc(NULL, (log->n_procs + 1) * sizeof *order);
  for (size_t p = 0; p < log->n_procs; p++)
    order[p] = p;
  by_rank_log = log;
  qsort(order, log->n_procs, sizeof *order, by_rank);
  for (size_t o = 0; o < log->n_procs && at < (int)sizeof text - 200; o++) {
    size_t p = order[o];
    long long k = p == hung->proc ? hung->launches : launches_of(log, p, hung);
    if (k < 0)
      continue;
    char other[64];
    cgm_hang_who(log, p, other, sizeof other);
    at += snprintf(text + at, sizeof text - (size_t)at, "%s%s launched it %lld time%s", n++ ? ", " : "",
                   other, k, k == 1 ? "" : "s");
    if (k < fewest) {
      fewest = k;
      l.behind = (long long)p;
    }
  }
  free(order);
  if (l.behind >= 0) {
    char behind[64];
    cgm_hang_who(log, (size_t)l.behind, behind, sizeof behind);
    snprintf(
        text + at, sizeof text - (size_t)at,
        ": %s waits in its launch %lld, for %s, which is behind (it launched the graph %lld time%s; what it "
        "did instead of its next launch is where to look)",
        who, hung->launches, behind, fewest, fewest == 1 ? "" : "s");
  } else if (n > 1) {
    snprintf(
        text + at, sizeof text - (size_t)at,
        ": %s waits in its launch %lld and no rank launched the graph fewer times: none is behind in this "
        "graph (look at a collective outside it, or another graph)",
        who, hung->launches);
  } else {
    snprintf(
        text + at, sizeof text - (size_t)at,
        ": %s waits in its launch %lld for a peer; no other rank's launches of the graph are in these logs "
        "(give every rank's log)",
        who, hung->launches);
  }
  l.text = dup_text(text);
  return l;
}

size_t cgm_hang_lineup(const cgl_log *log, cgm_lineup **out) {
  *out = NULL;
  size_t n = 0;
  for (size_t i = 0; i < log->n_hangs; i++) {
    const cgl_hang *h = &log->hangs[i];
    if (h->kind != CG_EV_HANG_LAUNCH)
      continue;
    bool said = false; /* once per process and graph */
    for (size_t j = 0; j < i && !said; j++)
      said = log->hangs[j].kind == CG_EV_HANG_LAUNCH && log->hangs[j].proc == h->proc &&
             same_graph(&log->hangs[j], h);
    if (said)
      continue;
    *out = cgl_xrealloc(*out, (n + 1) * sizeof **out);
    (*out)[n++] = one(log, h);
  }
  return n;
}

void cgm_lineup_free(cgm_lineup *l, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(l[i].text);
  free(l);
}
