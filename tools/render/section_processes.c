/* The processes, one line (a row) each: what ran, its mode and driver, how its captures fared. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "json_rows.h"
#include "html_cells.h"
#include "html_text.h"
#include "plural.h"
#include "process_command.h"
#include "ended_early.h"
#include "capguard/log_keys.h"

static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* One line a process: what it was, how it ran, and how its captures fared; the
 * story of the runs in a log (run 1 broke, run 2 was primed) at a glance.
 * Processes that never used CUDA (a shell, a compiler a JIT runs) are one line
 * together when some process did. */
static void print_processes(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  const size_t shown_max = 20;
  size_t cuda = 0, shown = 0, skipped = 0;
  for (size_t p = 0; p < rows->n_procs; p++)
    cuda += rows->procs[p].cuda;
  /* by run, then by pid: several logs (--all) are read one after the other */
  const uint32_t *order = rep->order;
  fprintf(out, "\n%sProcesses%s (as logged)\n", pal.bold, pal.reset);
  for (size_t i = 0; i < rows->n_procs; i++) {
    size_t p = order[i];
    const cgl_process *pr = &rows->procs[p];
    if ((cuda && !pr->cuda) || shown == shown_max) {
      skipped += !(cuda && !pr->cuda);
      continue;
    }
    shown++;
    size_t captures = cgr_proc_captures(a, p), broken = a->procs[p].broken, served = a->procs[p].served;
    char who[256], cmd[96], drv[64] = "";
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(pr, cmd, sizeof cmd);
    if (!pr->cuda)
      snprintf(drv, sizeof drv, ", no CUDA");
    else if (cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) > 0)
      snprintf(drv, sizeof drv, ", emulating CUDA %lld.%lld",
               cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) / 1000,
               (cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) % 1000) / 10);
    else if (cgl_process_num(pr, CGL_PR_DRIVER_VERSION) > 0)
      snprintf(drv, sizeof drv, ", CUDA %lld.%lld", cgl_process_num(pr, CGL_PR_DRIVER_VERSION) / 1000,
               (cgl_process_num(pr, CGL_PR_DRIVER_VERSION) % 1000) / 10);
    fprintf(out, "  %s %s (%s mode%s): %zu capture%s%s, %s%zu broken%s", who, cmd[0] ? cmd : "?",
            or (cgl_word(&cg_run_modes, pr->mode), "?"), drv, captures, cg_plural(captures),
            cgr_ended_early(pr) ? " logged" : "", broken ? pal.red : pal.green, broken, pal.reset);
    if (served)
      fprintf(out, ", %zu load%s served from the priming file", served, cg_plural(served));
    fputc('\n', out);
  }
  if (skipped)
    fprintf(out, "  and %zu more\n", skipped);
  if (cuda && cuda < rows->n_procs) {
    /* their names, once each, a few ("..." when there are more) */
    fprintf(out, "  and %zu process%s without CUDA (", rows->n_procs - cuda,
            cg_plural_es(rows->n_procs - cuda));
    const char *names[5];
    size_t named = 0;
    for (size_t p = 0; p < rows->n_procs; p++) {
      const cgl_process *pr = &rows->procs[p];
      if (pr->cuda || !pr->argc)
        continue;
      const char *slash = strrchr(pr->argv[0], '/'), *name = slash ? slash + 1 : pr->argv[0];
      bool dup = false;
      for (size_t k = 0; k < named && !dup; k++)
        dup = !strcmp(names[k], name);
      if (dup)
        continue;
      if (named == sizeof names / sizeof names[0]) {
        fputs(", ...", out);
        break;
      }
      fprintf(out, "%s%s", named ? ", " : "", name);
      names[named++] = name;
    }
    fputs(")\n", out);
  }
}

/* Each process's broken captures: id, where it began, what broke it. */
static json_t **broken_json_by_process(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t **per = calloc(rows->n_procs + 1, sizeof *per);
  if (!per)
    return NULL;
  for (size_t p = 0; p < rows->n_procs; p++)
    per[p] = json_array();
  for (size_t b = 0; b < a->n_broken; b++) {
    const cgl_capture *c = &rows->caps[a->broken[b].capture];
    json_t *o = json_pack("{s:I, s:o}", CG_KEY_ID, (json_int_t)c->id, CG_KEY_BEGAN, jstr(c->began));
    cgr_json_offender(rep, a->broken[b].capture, a->broken[b].first_event, o);
    json_array_append_new(per[c->proc], o);
  }
  return per;
}

static json_t *processes_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t *procs = json_array(), **per = broken_json_by_process(rep);
  const size_t *requests = rep->requests_by_proc; /* NULL: none counted */
  const uint32_t *order = rep->order;             /* by run, then pid */
  for (size_t i = 0; i < rows->n_procs; i++) {
    size_t p = order[i];
    const cgl_process *pr = &rows->procs[p];
    json_t *argv = json_array();
    for (size_t i = 0; i < pr->argc; i++)
      json_array_append_new(argv, jtext(pr->argv[i]));
    json_array_append_new(
        procs, json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:b, s:o}", CG_KEY_PID, (json_int_t)pr->pid,
                         CG_KEY_PPID, (json_int_t)pr->ppid, CG_KEY_ARGV, argv, CG_KEY_MODE,
                         jstr(cgl_word(&cg_run_modes, pr->mode)), CG_KEY_DRIVER_VERSION,
                         (json_int_t)cgl_process_num(pr, CGL_PR_DRIVER_VERSION), CG_KEY_EMULATE_DRIVER,
                         (json_int_t)cgl_process_num(pr, CGL_PR_EMULATE_DRIVER), "exited", pr->has_summary,
                         CG_KEY_LOG, jtext(rows->files[pr->file])));
    json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "broken_captures",
                        per ? per[p] : json_array());
    if (cgr_ended_early(pr)) { /* no exit record: the last thing it logged, in words */
      char last[1024];
      cgr_report_ended_last(rep, p, last, sizeof last);
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "last_logged", jtext(last));
      if (cgl_process_rare(pr)->signal) /* capguard run's "ended" record: the signal that killed it */
        json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_SIGNAL,
                            json_integer(cgl_process_rare(pr)->signal));
    }
    if (a->n_runs > 1) /* which run of runs[] it belongs to */
      json_object_set_new(
          json_array_get(procs, json_array_size(procs) - 1), CG_KEY_RUN,
          json_integer((json_int_t)(a->shown_run == SIZE_MAX ? pr->run_index + 1 : a->shown_run + 1)));
    json_t *ct = cgr_capture_time_process_json(pr);
    if (ct)
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), "capture_time", ct);
    if (requests && requests[p]) /* counted per process, and so per rank */
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_REQUEST_LOADS,
                          json_integer((json_int_t)requests[p]));
    if (pr->rank_known) {
      json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_RANK,
                          json_integer(cgl_process_num(pr, CGL_PR_RANK)));
      if (cgl_process_num(pr, CGL_PR_WORLD_SIZE) > 0)
        json_object_set_new(json_array_get(procs, json_array_size(procs) - 1), CG_KEY_WORLD_SIZE,
                            json_integer(cgl_process_num(pr, CGL_PR_WORLD_SIZE)));
    }
  }
  free(per);
  return procs;
}

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

static void process_driver(const cgl_process *pr, char *drv, size_t cap) {
  if (!pr->cuda)
    snprintf(drv, cap, "no CUDA");
  else if (cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) > 0)
    snprintf(drv, cap, "emulating CUDA %lld.%lld", cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) / 1000,
             (cgl_process_num(pr, CGL_PR_EMULATE_DRIVER) % 1000) / 10);
  else if (cgl_process_num(pr, CGL_PR_DRIVER_VERSION) > 0)
    snprintf(drv, cap, "CUDA %lld.%lld", cgl_process_num(pr, CGL_PR_DRIVER_VERSION) / 1000,
             (cgl_process_num(pr, CGL_PR_DRIVER_VERSION) % 1000) / 10);
  else
    snprintf(drv, cap, "?");
}

static void processes(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fputs("<h2>Processes</h2>\n<table><tr><th>process</th><th>parent</th><th>command</th>"
        "<th>mode</th><th>driver</th><th>captures</th><th>broken</th><th>calls during capture</th>"
        "<th>served</th></tr>\n",
        o);
  for (size_t p = 0; p < rows->n_procs && p < CGR_HTML_MAX_ROWS; p++) {
    const cgl_process *pr = &rows->procs[p];
    const struct cgr_proc_stats *st = &a->procs[p];
    char who[256], cmd[160], drv[64];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(pr, cmd, sizeof cmd);
    process_driver(pr, drv, sizeof drv);
    fputs("<tr><td>", o);
    esc(o, who);
    fprintf(o, "</td><td class=\"n\">%lld</td><td><code>", pr->ppid);
    esc(o, cmd);
    fputs("</code></td><td>", o);
    esc(o, or (cgl_word(&cg_run_modes, pr->mode), "?"));
    fputs("</td><td>", o);
    esc(o, drv);
    fprintf(o,
            "</td><td class=\"n\">%zu</td><td class=\"n%s\">%zu</td><td class=\"n\">%zu</td>"
            "<td class=\"n\">%zu</td></tr>\n",
            cgr_proc_captures(a, p), st->broken ? " bad" : "", (size_t)st->broken, (size_t)st->calls,
            (size_t)st->served);
  }
  fputs("</table>\n", o);
  cgr_html_more_rows(o, rows->n_procs, "processes");
}

void cgr_processes_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->rows.n_procs)
    print_processes(out, rep, pal);
}

void cgr_processes_json(json_t *root, const cgr_report *rep) {
  json_object_set_new(root, "processes", processes_json(rep));
}

void cgr_processes_html(FILE *o, const cgr_report *rep) { processes(o, rep); }
