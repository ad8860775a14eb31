/* report.h. Each section is built here once, from the log; the renderings
 * print the value and never the log. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "ended_early.h"
#include "findings.h"
#include "log_pool.h" /* cgl_xrealloc */
#include "offender.h"
#include "process_order.h"
#include "rerun_command.h"

static void rows_of(const cgl_log *log, cgr_rows *r) {
  *r = (cgr_rows){.files = log->files,
                  .n_files = log->n_files,
                  .procs = log->procs,
                  .n_procs = log->n_procs,
                  .caps = log->caps,
                  .n_caps = log->n_caps,
                  .evs = log->evs,
                  .n_evs = log->n_evs,
                  .stale = log->stale,
                  .n_stale = log->n_stale,
                  .hangs = log->hangs,
                  .n_hangs = log->n_hangs,
                  .reqs = log->reqs,
                  .n_reqs = log->n_reqs,
                  .runs = log->runs,
                  .n_runs = log->n_runs,
                  .lines = log->lines,
                  .records = log->records,
                  .malformed = log->malformed,
                  .newer = log->newer,
                  .unknown = log->unknown,
                  .cut_files = log->cut_files,
                  .first_malformed = log->first_malformed};
}

/* Loads on the request path: which count, their totals, and by process. */
static void requests(const cgl_log *log, cgr_report *r) {
  cgr_request_totals_of(log, &r->requests);
  if (!log->n_reqs)
    return;
  r->request_counts = cgl_xrealloc(NULL, log->n_reqs * sizeof *r->request_counts);
  r->requests_by_proc = cgl_xrealloc(NULL, (log->n_procs + 1) * sizeof *r->requests_by_proc);
  memset(r->requests_by_proc, 0, (log->n_procs + 1) * sizeof *r->requests_by_proc);
  for (size_t i = 0; i < log->n_reqs; i++) {
    r->request_counts[i] = cgr_request_counts(log, i);
    r->requests_by_proc[log->reqs[i].proc] += r->request_counts[i];
  }
}

/* The stale groups, each with the findings table's advice for it. */
static void stale(const cgl_log *log, cgr_report *r) {
  r->n_stale_groups = cgr_stale_groups(log, &r->stale_groups);
  if (!r->n_stale_groups)
    return;
  for (int freed = 0; freed < 2; freed++) {
    cgf_facts facts = {.stale_group = true, .stale_freed = freed};
    const cgf_finding *x = cgf_first(&facts, CGF_STALE_GROUP, &r->stale_advice[freed]);
    for (size_t g = 0; x && g < r->n_stale_groups; g++)
      if ((r->stale_groups[g].frees != 0) == freed)
        r->stale_groups[g].advice = x->sentence;
  }
}

/* The escaped calls by kind, call and site (interned: equal pointers). */
static void escapes(const cgl_log *log, cgr_report *r) {
  for (size_t i = 0; r->a.verdicts[CG_VERDICT_ESCAPED] && i < log->n_evs; i++) {
    const cgl_event *e = &log->evs[i];
    if (e->verdict != CG_VERDICT_ESCAPED)
      continue;
    size_t g = 0;
    while (g < r->n_escapes &&
           !(r->escapes[g].first->kind == e->kind && r->escapes[g].first->call == e->call &&
             r->escapes[g].first->site == e->site))
      g++;
    if (g == r->n_escapes) {
      r->escapes = cgl_xrealloc(r->escapes, (r->n_escapes + 1) * sizeof *r->escapes);
      r->escapes[r->n_escapes++] = (cgr_escape_group){e, 0};
    }
    r->escapes[g].count++;
  }
}

void cgr_report_build(cgr_report *r, const cgl_log *log, const cgl_log *all, size_t shown) {
  memset(r, 0, sizeof *r);
  cgr_analyse(log, &r->a);
  if (all)
    cgr_count_runs(all, shown, &r->a);
  rows_of(log, &r->rows);
  rows_of(all ? all : log, &r->whole);
  for (size_t p = 0; p < log->n_procs; p++)
    r->cuda += log->procs[p].cuda;
  r->order = cgr_process_order(log);
  cgr_capture_time_of(log, &r->capture_time);
  cgr_capture_time_sentence(log, r->capture_time_line, sizeof r->capture_time_line);
  cgr_rank_view_build(log, r->a.procs, &r->ranks);
  requests(log, r);
  stale(log, r);
  r->any_hang = cgr_hangs_any(log);
  if (r->any_hang) {
    r->n_hang_lineup = cgm_hang_lineup(log, &r->hang_lineup);
    r->n_hangs = cgr_hangs_said(log, &r->hangs);
  }
  cgr_load_facts_of(log, &r->loads);
  escapes(log, r);
}

void cgr_report_free(cgr_report *r) {
  cgr_free(&r->a);
  free(r->order);
  cgr_rank_view_free(&r->ranks);
  free(r->request_counts);
  free(r->requests_by_proc);
  free(r->stale_groups);
  cgf_list_free(&r->stale_advice[0]);
  cgf_list_free(&r->stale_advice[1]);
  if (r->hang_lineup)
    cgm_lineup_free(r->hang_lineup, r->n_hang_lineup);
  cgr_hangs_said_free(r->hangs, r->n_hangs);
  free(r->escapes);
  memset(r, 0, sizeof *r);
}

void cgr_report_process_label(const cgr_report *r, size_t proc, char *buf, size_t cap) {
  const cgl_process *p = &r->rows.procs[proc];
  if (r->rows.n_files > 1) {
    const char *f = r->rows.files[p->file], *slash = strrchr(f, '/');
    snprintf(buf, cap, "pid %lld (%s)", p->pid, slash ? slash + 1 : f);
  } else {
    snprintf(buf, cap, "pid %lld", p->pid);
  }
}

void cgr_report_ended_last(const cgr_report *r, size_t p, char *buf, size_t cap) {
  cgr_ended_last(r->a.log, p, buf, cap);
}

cgl_broken_by cgr_report_first_offender(const cgr_report *r, size_t capture, long first_event,
                                        cgl_offender *out) {
  return cgr_first_offender(r->a.log, capture, first_event, out);
}

void cgr_report_offender_phrase(const cgr_report *r, size_t capture, long first_event, char *buf,
                                size_t cap) {
  cgr_offender_phrase(r->a.log, capture, first_event, buf, cap);
}

uint32_t *cgr_report_all_order(const cgr_report *r) {
  return cgr_process_order(r->a.all ? r->a.all : r->a.log);
}

bool cgr_report_capture_broken(const cgr_report *r, size_t capture) {
  return cgl_capture_broken(r->a.log, capture);
}

bool cgr_report_rerun_command(const cgr_report *r, size_t run, cg_run_mode mode, char *buf, size_t cap) {
  return cgr_rerun_command(r->a.log, run, mode, buf, cap);
}
