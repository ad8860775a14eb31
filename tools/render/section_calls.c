/* Every call during capture: a table in the page (with what the verdicts that happened mean),
 * an instant each in the trace. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "html_cells.h"
#include "html_text.h"
#include "offender.h"
#include "log_pool.h"
#include "capguard/log_keys.h"

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }
static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* Every call during capture with its details: what the tooltips say, readable. */
static void calls_table(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  if (!rows->n_evs)
    return;
  fputs("<h2>Calls during capture</h2>\n<table><tr><th>process</th><th>capture</th><th>call</th>"
        "<th>kind</th><th>verdict</th><th>result</th><th>at</th><th>kernels</th><th>log line</th></tr>\n",
        o);
  for (size_t i = 0; i < rows->n_evs && i < CGR_HTML_MAX_ROWS; i++) {
    const cgl_event *e = &rows->evs[i];
    char who[256];
    cgr_report_process_label(rep, e->proc, who, sizeof who);
    fputs("<tr><td>", o);
    esc(o, who);
    fprintf(o, "</td><td>%lld</td><td>", rows->caps[e->capture].id);
    esc(o, or (e->call, "?"));
    fputs("</td><td>", o);
    esc(o, or (cgl_word(&cg_event_kinds, e->kind), "other"));
    fprintf(o, "</td><td style=\"color:%s\">", cgr_html_verdict_colour(e->verdict));
    esc(o, cgr_html_verdict_word(e->verdict));
    char result[160];
    cgr_event_result(e, result, sizeof result);
    fputs("</td><td>", o);
    esc(o, result);
    fputs("</td><td><code>", o);
    esc(o, e->site);
    fputs("</code></td><td><code>", o);
    cgr_html_kernel_cell(o, e);
    fputs("</code></td><td><code>", o);
    const char *file = cgl_event_file(rows->files, rows->procs, e), *slash = strrchr(file, '/');
    esc(o, slash ? slash + 1 : file);
    fprintf(o, ":%lld</code></td></tr>\n", e->src_line);
  }
  fputs("</table>\n", o);
  if (rows->n_evs > CGR_HTML_MAX_ROWS)
    fprintf(o, "<p>and %zu more calls (all are in the log and in --json)</p>\n",
            rows->n_evs - CGR_HTML_MAX_ROWS);
  /* What the verdicts that happened mean, in the schema's words and order. */
  fputs("<p class=\"sum\">", o);
  bool first = true;
  for (unsigned v = 0; v < CG_VERDICT_COUNT; v++) {
    if (!a->verdicts[v])
      continue;
    fprintf(o, "%s<strong>%s</strong>: ", first ? "" : "; ", cg_verdict_name(v));
    esc(o, cg_word_what(&cg_verdicts, v));
    first = false;
  }
  fputs("</p>\n", o);
}

void cgr_calls_html(FILE *o, const cgr_report *rep) { calls_table(o, rep); }

static json_t *jtrace(const char *s) { return cgl_json_text(s); }

/* Each call during capture an instant ("i") on the calling thread, its details in args. */
void cgr_calls_trace(json_t *evs, const cgr_report *rep, long long t0) {
  const cgr_rows *rows = &rep->rows;
  for (size_t i = 0; i < rows->n_evs; i++) {
    const cgl_event *e = &rows->evs[i];
    const cgl_process *pr = &rows->procs[e->proc];
    char name[160];
    const char *verdict = cgl_word(&cg_verdicts, e->verdict);
    snprintf(name, sizeof name, "%s %s", e->call ? e->call : "?", verdict ? verdict : "?");
    json_t *kernels = json_array();
    for (size_t k = 0; k < e->kernels->n; k++)
      json_array_append_new(kernels, jtrace(e->kernels->v[k]));
    long long t = e->time_ns > 0 ? e->time_ns : rows->caps[e->capture].begin_ns;
    json_array_append_new(
        evs,
        json_pack("{s:s, s:s, s:s, s:o, s:f, s:I, s:I, s:{s:o, s:o, s:o, s:I, s:o, s:o, s:I}}", "ph", "i",
                  "s", "t", "cat", "call", "name", jtrace(name), "ts", cgr_us_since(t, t0), "pid",
                  (json_int_t)pr->pid, "tid", (json_int_t)cgl_event_num(e, CGL_EV_TID), "args", CG_KEY_EVENT,
                  jtrace(cgl_word(&cg_event_kinds, e->kind)), CG_KEY_VERDICT, jtrace(verdict), "site",
                  jtrace(e->site), CG_KEY_RESULT, (json_int_t)cgl_event_num(e, CGL_EV_RESULT), CG_KEY_KERNELS,
                  kernels, CG_KEY_LOG, jtrace(cgl_event_file(rows->files, rows->procs, e)), CG_KEY_LINE,
                  (json_int_t)e->src_line));
    json_t *args = json_object_get(json_array_get(evs, json_array_size(evs) - 1), "args");
    if (args) {
      char result[160];
      cgr_event_result(e, result, sizeof result);
      json_object_set_new(args, "result_words", jtrace(result));
      if (e->handle)
        json_object_set_new(args, CG_KEY_HANDLE, jtrace(e->handle));
    }
  }
}
