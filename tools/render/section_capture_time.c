#include "sections.h"
#include "html_text.h"
#include "plural.h"

#include "capguard/log_keys.h"
#include "capture_totals.h"
#include "log_pool.h"

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

json_t *cgr_capture_time_process_json(const cgl_process *pr) {
  if (!pr->has_capture_time)
    return NULL;
  json_t *slow = json_array();
  for (size_t i = 0; i < pr->n_slowest; i++)
    json_array_append_new(slow, json_pack("{s:I, s:I, s:o}", CG_KEY_ID, (json_int_t)pr->slowest[i].id,
                                          CG_KEY_NS, (json_int_t)pr->slowest[i].ns, CG_KEY_BEGAN,
                                          cgl_json_text(pr->slowest[i].began)));
  json_t *o = json_pack("{s:I, s:I, s:o}", CG_KEY_CAPTURES_TIMED,
                        (json_int_t)cgl_process_num(pr, CGL_PR_CAPTURES_TIMED), CG_KEY_CAPTURE_NS,
                        (json_int_t)pr->capture_ns, CG_KEY_SLOWEST, slow);
  if (o && pr->first_capture_ns > 0)
    json_object_set_new(o, CG_KEY_FIRST_CAPTURE_NS, json_integer(pr->first_capture_ns));
  if (o && pr->first_replay_ns > 0)
    json_object_set_new(o, CG_KEY_FIRST_REPLAY_NS, json_integer(pr->first_replay_ns));
  return o;
}

static json_t *capture_time_json(const cgr_report *rep) {
  const cgr_capture_time t = rep->capture_time;
  if (!t.procs)
    return NULL;
  json_t *o = json_pack("{s:I, s:I, s:I}", "graphs", (json_int_t)t.graphs, CG_KEY_CAPTURES_TIMED,
                        (json_int_t)t.timed, CG_KEY_CAPTURE_NS, (json_int_t)t.ns);
  if (o && t.to_first_replay_ns >= 0)
    json_object_set_new(o, "to_first_replay_ns", json_integer(t.to_first_replay_ns));
  if (o && t.has_slowest)
    json_object_set_new(o, CG_KEY_SLOWEST,
                        json_pack("{s:I, s:I, s:I, s:o}", CG_KEY_PID,
                                  (json_int_t)rep->rows.procs[t.slowest_proc].pid, CG_KEY_ID,
                                  (json_int_t)t.slowest_id, CG_KEY_NS, (json_int_t)t.slowest_ns, CG_KEY_BEGAN,
                                  cgl_json_text(t.slowest_began)));
  return o;
}

void cgr_capture_time_html(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  const char *line = rep->capture_time_line;
  if (!line[0])
    return;
  fputs("<h2>Capture time</h2>\n<p>", o);
  esc(o, line);
  fputs("</p>\n<table><tr><th>process</th><th>graphs</th><th>in capture</th><th>first replay after</th>"
        "<th>slowest captures (where each began)</th></tr>\n",
        o);
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if (!pr->has_capture_time || !cgl_process_num(pr, CGL_PR_CAPTURES_TIMED))
      continue;
    char who[256], rank[64], total[32], first[32] = "";
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_rank_words(pr, rank, sizeof rank);
    cgr_duration(pr->capture_ns, total, sizeof total);
    if (pr->first_capture_ns > 0 && pr->first_replay_ns >= pr->first_capture_ns)
      cgr_duration(pr->first_replay_ns - pr->first_capture_ns, first, sizeof first);
    long long g = cgl_process_num(pr, CGL_PR_CAPTURES_TIMED) - cgl_process_num(pr, CGL_PR_CAPTURES_BROKEN);
    fputs("<tr><td>", o);
    esc(o, who);
    esc(o, rank);
    fprintf(o, "</td><td class=\"n\">%lld</td><td class=\"n\">", g > 0 ? g : 0);
    esc(o, total);
    fputs("</td><td class=\"n\">", o);
    esc(o, first);
    fputs("</td><td>", o);
    for (size_t i = 0; i < pr->n_slowest; i++) {
      char d[32];
      cgr_duration(pr->slowest[i].ns, d, sizeof d);
      fprintf(o, "%s", i ? "<br>" : "");
      esc(o, d);
      fprintf(o, " capture %lld at <code>", pr->slowest[i].id);
      esc(o, pr->slowest[i].began);
      fputs("</code>", o);
    }
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
}

void cgr_capture_time_trace(json_t *evs, const cgr_report *rep, long long t0) {
  const cgr_rows *rows = &rep->rows;
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if (!pr->has_capture_time || pr->first_capture_ns <= 0 || pr->first_replay_ns < pr->first_capture_ns)
      continue;
    json_t *args = cgr_capture_time_process_json(pr);
    json_array_append_new(
        evs, json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:o}", "ph", "X", "cat", "capture-time", "name",
                       "first capture to first replay", "ts", cgr_us_since(pr->first_capture_ns, t0), "dur",
                       cgr_us_since(pr->first_replay_ns, pr->first_capture_ns), "pid", (json_int_t)pr->pid,
                       "tid", (json_int_t)pr->pid, "args", args ? args : json_object()));
  }
}

/* "Capture time": the log's line, then each process's figures and its
 * slowest captures with where each began; nothing when no process said. */
void cgr_capture_time_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_rows *rows = &rep->rows;
  const char *line = rep->capture_time_line;
  if (!line[0])
    return;
  fprintf(out, "\n%sCapture time%s (wall time inside captures, as each process summed it at exit)\n",
          pal.bold, pal.reset);
  fprintf(out, "  %s\n", line);
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if (!pr->has_capture_time || !cgl_process_num(pr, CGL_PR_CAPTURES_TIMED))
      continue;
    char who[256], rank[64], graphs[32], total[32];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_rank_words(pr, rank, sizeof rank);
    long long g = cgl_process_num(pr, CGL_PR_CAPTURES_TIMED) - cgl_process_num(pr, CGL_PR_CAPTURES_BROKEN);
    cgr_thousands(g > 0 ? g : 0, graphs, sizeof graphs);
    cgr_duration(pr->capture_ns, total, sizeof total);
    fprintf(out, "  %s%s: %s graph%s in %s", who, rank, graphs, cg_plural((unsigned long long)g), total);
    if (pr->first_capture_ns > 0 && pr->first_replay_ns >= pr->first_capture_ns) {
      char d[32];
      cgr_duration(pr->first_replay_ns - pr->first_capture_ns, d, sizeof d);
      fprintf(out, ", first replay %s after its first begin", d);
    }
    fputc('\n', out);
    for (size_t i = 0; i < pr->n_slowest; i++) {
      char d[32];
      cgr_duration(pr->slowest[i].ns, d, sizeof d);
      fprintf(out, "    %s%-8s%s capture %lld, began at %s\n", i ? "" : "slowest ", d, i ? "        " : "",
              pr->slowest[i].id, *pr->slowest[i].began ? pr->slowest[i].began : "(not logged)");
    }
  }
}

void cgr_capture_time_json(json_t *root, const cgr_report *rep) {
  json_t *ct = capture_time_json(rep);
  if (ct)
    json_object_set_new(root, "capture_time", ct);
}
