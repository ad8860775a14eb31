/* The runs of the logs: a line each in the text ("Runs", when there are several), with their
 * processes and advice in JSON, and what ran (command, driver, GPU architecture) in the page. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "capguard/log_keys.h"
#include "json_rows.h"
#include "html_text.h"
#include "plural.h"
#include "process_command.h"

/* Appends to buf at *used; a line too long for buf is cut, never overrun. */
#define ADD(...)                                                    \
  do {                                                              \
    int n_ = snprintf(buf + used, cap - used, __VA_ARGS__);         \
    if (n_ > 0)                                                     \
      used = (size_t)n_ < cap - used ? used + (size_t)n_ : cap - 1; \
  } while (0)

static void run_headline(const cgr_report *rep, size_t r, cg_palette pal, char *buf, size_t cap) {
  const cgr_analysis *a = &rep->a;
  const struct cgr_run_stats *st = &a->runs[r];
  const cgl_process *top = &rep->whole.procs[rep->whole.runs[r].first_proc];
  char cmd[96];
  size_t used = 0;
  if (!cap)
    return;
  buf[0] = '\0';
  cgr_process_command(top, cmd, sizeof cmd);
  ADD("run %zu: pid %lld %s (%zu process%s): %zu capture%s%s, %s%zu broken%s", r + 1, top->pid,
      cmd[0] ? cmd : "?", st->procs, cg_plural_es(st->procs), st->captures, cg_plural(st->captures),
      st->ended_early ? " logged" : "", st->broken ? pal.red : pal.green, st->broken, pal.reset);
  if (st->ended_early)
    ADD(", %s%zu ended without an exit record%s", pal.red, st->ended_early, pal.reset);
  if (st->served)
    ADD(", %zu load%s served from the priming file", st->served, cg_plural(st->served));
}

/* One line a run, when the log holds several: which one the report is about. */
static void print_runs(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  bool one = a->shown_run != SIZE_MAX;
  fprintf(out, "\n%sRuns%s (%s)\n", pal.bold, pal.reset,
          one ? "the report below is of the latest; --all for every run" : "all reported below");
  for (size_t r = 0; r < a->n_runs; r++) {
    char line[1024];
    run_headline(rep, r, pal, line, sizeof line);
    fprintf(out, "  %s %s\n", one && r == a->shown_run ? ">" : " ", line);
  }
}

/* Every run in the logs, and which one the rest of this document is about;
 * with --all over several runs, each run's own headline, processes and
 * advice (one run's advice is never said of another). */
static json_t *runs_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *whole = &rep->whole;
  json_t *runs = json_array();
  uint32_t *order = cgr_report_all_order(rep); /* by run: run r's processes follow run r - 1's */
  size_t at = 0;
  for (size_t r = 0; r < a->n_runs; r++) {
    const cgl_process *top = &whole->procs[whole->runs[r].first_proc];
    const struct cgr_run_stats *st = &a->runs[r];
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", CG_KEY_RUN, (json_int_t)(r + 1),
                          CG_KEY_PID, (json_int_t)top->pid, "processes", (json_int_t)st->procs,
                          CG_KEY_CAPTURES, (json_int_t)st->captures, CG_KEY_CAPTURES_BROKEN,
                          (json_int_t)st->broken, "calls_during_capture", (json_int_t)st->calls, "served",
                          (json_int_t)st->served, "reported", a->shown_run == SIZE_MAX || a->shown_run == r);
    json_object_set_new(o, "processes_with_cuda", json_integer((json_int_t)st->cuda));
    json_object_set_new(o, "ended_without_exit_record", json_integer((json_int_t)st->ended_early));
    char line[1024];
    run_headline(rep, r, (cg_palette){"", "", "", "", "", ""}, line, sizeof line);
    json_object_set_new(o, "headline", jtext(line));
    json_t *pids = json_array(); /* sorted: order is by run, then pid */
    for (; at < whole->n_procs && whole->procs[order[at]].run_index == r; at++)
      json_array_append_new(pids, json_integer((json_int_t)whole->procs[order[at]].pid));
    json_object_set_new(o, "pids", pids);
    if (a->run_advice) {
      json_object_set_new(o, "advice", cgr_json_advice(&a->run_advice[r]));
      json_object_set_new(o, "findings", cgr_json_findings(&a->run_advice[r]));
    }
    json_array_append_new(runs, o);
  }
  free(order);
  return runs;
}

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

/* "CUDA 12.2, CUDA 13.0 (emulated 12.2)": the drivers the run's processes used. */
static void run_drivers(const cgr_report *rep, size_t r, char *buf, size_t cap) {
  const cgr_rows *rows = &rep->rows;
  size_t used = 0, n = 0;
  long long seen[4] = {0};
  buf[0] = '\0';
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if ((rows->n_runs && pr->run_index != r) || !pr->cuda || cgl_process_num(pr, CGL_PR_DRIVER_VERSION) <= 0)
      continue;
    long long v = cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) > 0 ? -cgl_process_num(pr, CGL_PR_EMULATE_DRIVER)
                                                                 : cgl_process_num(pr, CGL_PR_DRIVER_VERSION);
    bool have = false;
    for (size_t k = 0; k < n && !have; k++)
      have = seen[k] == v;
    if (have)
      continue;
    if (n == sizeof seen / sizeof seen[0]) { /* more than it names: said */
      snprintf(buf + used, cap - used, ", ...");
      break;
    }
    seen[n++] = v;
    long long m = v < 0 ? -v : v;
    int k = snprintf(buf + used, cap - used, "%sCUDA %lld.%lld%s", used ? ", " : "", m / 1000,
                     (m % 1000) / 10, v < 0 ? " (emulated)" : "");
    if (k > 0 && (size_t)k < cap - used)
      used += (size_t)k;
  }
}

/* "sm_80, sm_90": the architectures of the images the run loaded during capture. */
static void run_archs(const cgr_report *rep, size_t r, char *buf, size_t cap) {
  const cgr_rows *rows = &rep->rows;
  bool sm[256] = {false};
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < rows->n_evs; i++) {
    const cgl_event *e = &rows->evs[i];
    if (rows->n_runs && rows->procs[e->proc].run_index != r)
      continue;
    if (cgl_event_num(e, CGL_EV_IMAGE_SM) > 0 && cgl_event_num(e, CGL_EV_IMAGE_SM) < 256)
      sm[cgl_event_num(e, CGL_EV_IMAGE_SM)] = true;
  }
  for (int k = 0; k < 256; k++)
    if (sm[k]) {
      int n = snprintf(buf + used, cap - used, "%ssm_%d", used ? ", " : "", k);
      if (n > 0 && (size_t)n < cap - used)
        used += (size_t)n;
    }
}

/* What ran: per run, its command line, its drivers, and the GPU architecture
 * of the images loaded during capture (the log names no GPU). */
static void what_ran(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  size_t runs = rows->n_runs ? rows->n_runs : 1;
  if (!rows->n_procs)
    return;
  fputs("<table><tr><th>run</th><th>command</th><th>driver</th><th>GPU architecture "
        "(of the images loaded during capture)</th></tr>\n",
        o);
  for (size_t r = 0; r < runs; r++) {
    size_t top = rows->n_runs ? rows->runs[r].first_proc : 0;
    char cmd[1024], drivers[128], archs[128];
    run_drivers(rep, r, drivers, sizeof drivers);
    run_archs(rep, r, archs, sizeof archs);
    cgr_report_rerun_command(rep, r, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
    const char *argv_part = strstr(cmd, " -- ");
    fprintf(o, "<tr><td>%zu (pid %lld)</td><td><code>", r + 1, rows->procs[top].pid);
    esc(o, argv_part ? argv_part + 4 : "?");
    fputs("</code></td><td>", o);
    esc(o, drivers[0] ? drivers : "not used");
    fputs("</td><td>", o);
    esc(o, archs[0] ? archs : "-");
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
}

void cgr_runs_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->a.n_runs > 1)
    print_runs(out, rep, pal);
}

void cgr_runs_json(json_t *root, const cgr_report *rep) { json_object_set_new(root, "runs", runs_json(rep)); }

void cgr_runs_html(FILE *o, const cgr_report *rep) { what_ran(o, rep); }
