#include "hang_words.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/event.h"
#include "hang_lineup.h"
#include "log_pool.h" /* cgl_xrealloc */

static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

bool cgr_hangs_any(const cgl_log *log) {
  for (size_t i = 0; i < log->n_hangs; i++)
    if (log->hangs[i].kind != CG_EV_LAUNCH_COUNT)
      return true;
  for (size_t p = 0; p < log->n_procs; p++)
    if (cgl_process_rare(&log->procs[p])->collective_execs)
      return true;
  return false;
}

/* One hang event as a sentence. */
static void hang_words(const cgl_log *log, const cgl_hang *h, char *buf, size_t cap) {
  char who[64];
  cgm_hang_who(log, h->proc, who, sizeof who);
  bool unknown = h->kind == CG_EV_HANG_LAUNCH && h->kernel_nodes == 0;
  const char *advice = unknown ? "its kernels are not known, so whether it waits for a peer is not either"
                               : cg_hang_advice(h->kind, h->collectives == 0);
  long long pid = log->procs[h->proc].pid;
  if (h->kind == CG_EV_HANG_LAUNCH)
    snprintf(buf, cap,
             "%s (pid %lld): launch %lld of graph exec %s (capture %lld, captured at %s) not finished after "
             "%.1f s; %lld collective%s in it%s%s: %s",
             who, pid, h->launches, h->exec, h->capture_id, or (h->began, "an unknown site"),
             h->waited_ns / 1e9, h->collectives, h->collectives == 1 ? "" : "s", *h->collective ? ", " : "",
             h->collective, advice);
  else if (h->kind == CG_EV_HANG_TEARDOWN)
    snprintf(buf, cap,
             "%s (pid %lld): %s waited %.1f s (called from %s) while %lld graph exec%s holding "
             "collectives %s alive (the first captured at %s, capture %lld): %s",
             who, pid, h->call, h->waited_ns / 1e9, or (h->where, "?"), h->execs, h->execs == 1 ? "" : "s",
             h->execs == 1 ? "was" : "were", or (h->began, "an unknown site"), h->capture_id, advice);
  else if (h->kind == CG_EV_HANG_CAPTURE)
    snprintf(buf, cap, "%s (pid %lld): a capture open for %.1f s (thread %lld, begun at %s)", who, pid,
             h->waited_ns / 1e9, h->tid, or (h->began, "an unknown site"));
  else
    snprintf(buf, cap, "%s (pid %lld): %s waited %.1f s (called from %s)%s%s", who, pid, h->call,
             h->waited_ns / 1e9, or (h->where, "?"),
             h->capture_id ? "; the latest graph captured there began at " : "",
             h->capture_id ? or (h->began, "an unknown site") : "");
}

static void exit_words(const cgl_log *log, size_t p, char *buf, size_t cap) {
  char who[64];
  cgm_hang_who(log, p, who, sizeof who);
  long long n = cgl_process_rare(&log->procs[p])->collective_execs;
  snprintf(buf, cap, "%s (pid %lld): %lld graph exec%s holding collectives still alive at exit: %s", who,
           log->procs[p].pid, n, n == 1 ? "" : "s", cg_hang_advice(CG_EV_HANG_TEARDOWN, false));
}

static void add(cgr_hang_said **v, size_t *n, const cgl_hang *h, size_t proc, const char *text) {
  *v = cgl_xrealloc(*v, (*n + 1) * sizeof **v);
  size_t len = strlen(text) + 1;
  (*v)[(*n)++] = (cgr_hang_said){h, proc, memcpy(cgl_xrealloc(NULL, len), text, len)};
}

size_t cgr_hangs_said(const cgl_log *log, cgr_hang_said **out) {
  cgr_hang_said *v = NULL;
  size_t n = 0;
  char buf[2048];
  for (size_t i = 0; i < log->n_hangs; i++)
    if (log->hangs[i].kind != CG_EV_LAUNCH_COUNT) {
      hang_words(log, &log->hangs[i], buf, sizeof buf);
      add(&v, &n, &log->hangs[i], log->hangs[i].proc, buf);
    }
  for (size_t p = 0; p < log->n_procs; p++)
    if (cgl_process_rare(&log->procs[p])->collective_execs) {
      exit_words(log, p, buf, sizeof buf);
      add(&v, &n, NULL, p, buf);
    }
  *out = v;
  return n;
}

void cgr_hangs_said_free(cgr_hang_said *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i].text);
  free(v);
}
