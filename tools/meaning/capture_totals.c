#include "capture_totals.h"

#include <stdio.h>
#include <string.h>

#include "plural.h"

void cgr_capture_time_of(const cgl_log *log, cgr_capture_time *t) {
  *t = (cgr_capture_time){.to_first_replay_ns = -1};
  long long first_begin = 0, first_replay = 0;
  for (size_t p = 0; p < log->n_procs; p++) {
    const cgl_process *pr = &log->procs[p];
    if (!pr->has_capture_time)
      continue;
    t->procs++;
    t->timed += cgl_process_num(pr, CGL_PR_CAPTURES_TIMED);
    long long graphs =
        cgl_process_num(pr, CGL_PR_CAPTURES_TIMED) - cgl_process_num(pr, CGL_PR_CAPTURES_BROKEN);
    t->graphs += graphs > 0 ? graphs : 0;
    t->ns += pr->capture_ns;
    if (pr->n_slowest && (!t->has_slowest || pr->slowest[0].ns > t->slowest_ns)) {
      t->has_slowest = true;
      t->slowest_proc = p;
      t->slowest_id = pr->slowest[0].id;
      t->slowest_ns = pr->slowest[0].ns;
      t->slowest_began = pr->slowest[0].began;
    }
    if (pr->first_capture_ns > 0 && (!first_begin || pr->first_capture_ns < first_begin))
      first_begin = pr->first_capture_ns;
    if (pr->first_replay_ns > 0 && (!first_replay || pr->first_replay_ns < first_replay))
      first_replay = pr->first_replay_ns;
  }
  if (first_begin && first_replay >= first_begin)
    t->to_first_replay_ns = first_replay - first_begin;
}

void cgr_duration(long long ns, char *buf, size_t cap) {
  if (ns < 0)
    ns = 0;
  if (ns >= 1000000000ll)
    snprintf(buf, cap, "%.1f s", (double)ns / 1e9);
  else if (ns >= 1000000ll)
    snprintf(buf, cap, "%.0f ms", (double)ns / 1e6);
  else
    snprintf(buf, cap, "%.0f us", (double)ns / 1e3);
}

void cgr_thousands(long long n, char *buf, size_t cap) {
  char digits[32], out[48];
  int len = snprintf(digits, sizeof digits, "%lld", n < 0 ? 0 : n);
  size_t at = 0;
  for (int i = 0; i < len; i++) {
    if (i && (len - i) % 3 == 0)
      out[at++] = ',';
    out[at++] = digits[i];
  }
  /* copied by hand, cut to cap: gcc -O3 reads a "%s" of out into a smaller
   * buffer as a truncation it warns of, though the caller's cap bounds it */
  size_t keep = cap ? (at < cap - 1 ? at : cap - 1) : 0;
  if (cap) {
    memcpy(buf, out, keep);
    buf[keep] = 0;
  }
}

void cgr_capture_time_line(const cgr_capture_time *t, char *buf, size_t cap) {
  if (cap)
    buf[0] = 0;
  if (!t->procs || !t->timed)
    return;
  char graphs[32], total[32], slow[32] = "";
  cgr_thousands(t->graphs, graphs, sizeof graphs);
  cgr_duration(t->ns, total, sizeof total);
  if (t->has_slowest)
    cgr_duration(t->slowest_ns, slow, sizeof slow);
  int n = snprintf(buf, cap, "%s graph%s in %s", graphs, cg_plural((unsigned long long)t->graphs), total);
  if (n >= 0 && (size_t)n < cap && t->has_slowest)
    snprintf(buf + n, cap - (size_t)n, " (slowest %s at %s)", slow,
             t->slowest_began && *t->slowest_began ? t->slowest_began : "a site not logged");
}

void cgr_capture_time_sentence(const cgl_log *log, char *buf, size_t cap) {
  cgr_capture_time t;
  cgr_capture_time_of(log, &t);
  cgr_capture_time_line(&t, buf, cap);
  /* across runs (--all), the first begin of one and the first replay of
   * another are not one start-up: each process's own figure says it */
  size_t n = strlen(buf);
  if (!buf[0] || t.to_first_replay_ns < 0 || log->n_runs > 1 || n >= cap)
    return;
  char d[32];
  cgr_duration(t.to_first_replay_ns, d, sizeof d);
  snprintf(buf + n, cap - n, "; first replay %s after the first begin", d);
}

void cgr_rank_words(const cgl_process *pr, char *buf, size_t cap) {
  buf[0] = 0;
  if (pr->rank_known && cgl_process_num(pr, CGL_PR_WORLD_SIZE) > 0)
    snprintf(buf, cap, " rank %lld of %lld", cgl_process_num(pr, CGL_PR_RANK),
             cgl_process_num(pr, CGL_PR_WORLD_SIZE));
  else if (pr->rank_known)
    snprintf(buf, cap, " rank %lld", cgl_process_num(pr, CGL_PR_RANK));
}
