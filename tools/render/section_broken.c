/* The captures that broke: each with what broke it, where, its kernels and why. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "json_rows.h"
#include "html_cells.h"
#include "html_text.h"
#include "kernel_display.h"
#include "offender.h"
#include "plural.h"

static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* What the capture's end returned, and the calls it counted and did not log again. */
static void print_capture_end(FILE *out, const cgl_capture *c) {
  if (c->has_end_result && cgl_capture_end_result(c)) {
    char result[160];
    cgr_result_words(cgl_capture_end_result(c), NULL, result, sizeof result);
    fprintf(out, "    its end returned %s\n", result);
  }
  if (cgl_capture_repeats(c) > 0)
    fprintf(out,
            "    repeats: %lld more call%s like one logged (same call, verdict and site), "
            "counted, not logged again\n",
            cgl_capture_repeats(c), cg_plural(cgl_capture_repeats(c)));
}

static void print_broken(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(out, "\n%sBroken captures%s\n", pal.bold, pal.reset);
  for (size_t b = 0; b < a->n_broken; b++) {
    const cgl_capture *c = &rows->caps[a->broken[b].capture];
    char who[256];
    cgr_report_process_label(rep, c->proc, who, sizeof who);
    /* one word for it everywhere (the log's status says how: the end failed, or
     * the process exited with it open) */
    bool open_at_exit = cg_word_is(&cg_capture_statuses, c->status, CG_WORD_OPEN);
    fprintf(out, "  %s%s capture %lld%s (stream %s, %s, broken%s; began %s)\n", pal.red, who, c->id,
            pal.reset, or (c->stream, "?"), or (cgl_word(&cg_capture_modes, c->mode), "?"),
            open_at_exit ? ", open at exit" : "", or (c->began, "where unknown"));
    long f = a->broken[b].first_event;
    if (c->by == CGL_BY_CALL || f < 0) {
      /* what the capture record says (or that the log does not say) */
      char phrase[1024];
      cgr_report_offender_phrase(rep, a->broken[b].capture, f, phrase, sizeof phrase);
      fprintf(out, "    %s%s%s\n", pal.bold, phrase, pal.reset);
      /* the native caller too, when the phrase gave the Python line */
      const cgl_offender *o = cgl_capture_offender(c);
      if (c->by == CGL_BY_CALL && *o->where && strcmp(o->where, cgr_offender_at(o)))
        fprintf(out, "    where: %s\n", o->where);
      print_capture_end(out, c);
      /* the logged event of that call, when it is in the log: its kernels and why */
      if (f < 0 || c->by != CGL_BY_CALL || rows->evs[f].call != cgl_capture_offender(c)->call)
        continue;
    } else {
      const cgl_event *e = &rows->evs[f];
      char site[512];
      char result[160];
      cgl_event_site(e, site, sizeof site);
      cgr_event_result(e, result, sizeof result);
      fprintf(out, "    first broken by %s%s%s (%s, %s, CUresult %s) at %s\n", pal.bold, or (e->call, "?"),
              pal.reset, or (cgl_word(&cg_event_kinds, e->kind), "?"),
              or (cgl_word(&cg_verdicts, e->verdict), "?"), result, site);
      print_capture_end(out, c);
    }
    const cgl_event *e = &rows->evs[f];
    if (e->kernels->n) {
      fputs("    kernels:", out);
      char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
      size_t said = 0;
      for (size_t i = 0; i < e->kernels->n; i++)
        if (cg_kernel_display_new(e->kernels->v[i], disp, prev))
          fprintf(out, "%s %s", said++ ? "," : "", disp);
      fputs(e->kernels_truncated ? ", ...\n" : "\n", out);
    }
    char why[256];
    cgr_why(e, why, sizeof why);
    fprintf(out, "    why: %s\n", why);
  }
}

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

/* What the capture's end returned and its repeats, after the why (after:
 * the cell holds words already, which a separator ends: copied as text, the
 * why must not run into "its end returned"). */
static void end_cell(FILE *o, const cgl_capture *c, bool after) {
  if (c->has_end_result && cgl_capture_end_result(c)) {
    char result[160];
    cgr_result_words(cgl_capture_end_result(c), NULL, result, sizeof result);
    fputs(after ? "; <br>its end returned " : "its end returned ", o);
    esc(o, result);
    after = true;
  }
  if (cgl_capture_repeats(c) > 0)
    fprintf(o, "%srepeats: %lld more like one logged, not logged again", after ? "; <br>" : "",
            cgl_capture_repeats(c));
}

static void broken_table(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fputs("<h2>Broken captures</h2>\n<table><tr><th>process</th><th>capture</th><th>began</th>"
        "<th>first offender</th><th>at</th><th>kernels</th><th>why</th></tr>\n",
        o);
  for (size_t b = 0; b < a->n_broken && b < CGR_HTML_MAX_ROWS; b++) {
    const cgl_capture *c = &rows->caps[a->broken[b].capture];
    char who[256];
    cgr_report_process_label(rep, c->proc, who, sizeof who);
    fputs("<tr><td>", o);
    esc(o, who);
    fprintf(o, "</td><td>%lld (", c->id);
    esc(o, or (cgl_word(&cg_capture_modes, c->mode), "?"));
    fputs(")</td><td><code>", o);
    esc(o, or (c->began, "?"));
    fputs("</code></td>", o);
    long f = a->broken[b].first_event;
    if (f < 0 || (c->by == CGL_BY_CALL && rows->evs[f].call != cgl_capture_offender(c)->call)) {
      /* no logged event of the offender: what the capture record says, or that the log does not */
      char phrase[1024];
      cgr_report_offender_phrase(rep, a->broken[b].capture, f, phrase, sizeof phrase);
      if (c->by == CGL_BY_CALL) {
        fputs("<td class=\"bad\">", o);
        esc(o, phrase);
        fputs("</td><td><code>", o);
        esc(o, or (cgl_capture_offender(c)->where, cgr_offender_at(cgl_capture_offender(c))));
        fputs("</code></td><td></td><td>", o);
      } else {
        fputs("<td colspan=\"3\">", o);
        esc(o, phrase);
        fputs("</td><td>", o);
      }
      end_cell(o, c, false);
      fputs("</td></tr>\n", o);
      continue;
    }
    const cgl_event *e = &rows->evs[f];
    char why[256], phrase[1024];
    cgr_why(e, why, sizeof why);
    cgr_report_offender_phrase(rep, a->broken[b].capture, f, phrase, sizeof phrase);
    fputs("<td class=\"bad\">", o);
    esc(o, phrase);
    fputs("</td><td><code>", o);
    esc(o, e->site);
    fputs("</code></td><td><code>", o);
    cgr_html_kernel_cell(o, e);
    fputs("</code></td><td>", o);
    esc(o, why);
    end_cell(o, c, true);
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  cgr_html_more_rows(o, a->n_broken, "broken captures");
}

void cgr_broken_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->a.n_broken)
    print_broken(out, rep, pal);
}

void cgr_broken_json(json_t *root, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t *broken = json_array();
  for (size_t b = 0; b < a->n_broken; b++) {
    json_t *o = cgr_json_capture(rep, &rows->caps[a->broken[b].capture]);
    long f = a->broken[b].first_event;
    json_object_set_new(o, "first_call", f < 0 ? json_null() : cgr_json_event(rep, &rows->evs[f]));
    json_array_append_new(broken, o);
  }
  json_object_set_new(root, "broken", broken);
}

void cgr_broken_html(FILE *o, const cgr_report *rep) {
  if (rep->a.n_broken)
    broken_table(o, rep);
}
