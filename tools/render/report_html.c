/* --html: one self-contained page (inline CSS and SVG, no scripts, nothing
 * fetched). At the top, what ran: each run's command line, the driver and the
 * GPU architecture its images were built for; then a timeline per run (each
 * on its own axis) of every process's captures and the calls inside them;
 * then the findings of the text report, "why" included, and the calls during
 * capture as a table, so that nothing lives only in a hover tooltip.
 * One word for a capture that did not survive: broken. Linear in the log:
 * captures and calls are bucketed by process once; the drawing stops at a
 * fixed number of shapes (a million-capture log makes no useful picture). */
#include "html_text.h"
#include "plural.h"
#include "report_render.h"
#include "sections.h"

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

static const char CSS[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:16px;color:#222;"
    "max-width:1400px}"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}"
    "h3{font-size:14px;margin:14px 0 4px;font-weight:600}"
    ".sum{color:#444}.bad{color:#c00;font-weight:600}.good{color:#080;font-weight:600}"
    ".warn{color:#a60}table{border-collapse:collapse;margin:4px 0;max-width:100%}"
    /* a table wider than the window (a long name that must not break
     * mid-token) scrolls by itself instead of widening the page, so the
     * timeline still fits the window */
    "table{display:block;overflow-x:auto}"
    "td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
    /* a long name wraps only where it must, never mid-token in a narrow column */
    "td code{overflow-wrap:break-word;word-break:normal}"
    /* a command: on a line of its own, selected whole with one click */
    "pre.cmd{margin:4px 0 8px;padding:4px 8px;background:#f4f4f4;white-space:pre-wrap;"
    "overflow-wrap:break-word;user-select:all}"
    "th{background:#f4f4f4}td.n{text-align:right}code{font:12px ui-monospace,monospace}"
    "svg{display:block;box-sizing:border-box;width:100%;height:auto;border:1px solid #ddd;"
    "background:#fcfcfc}"
    "svg text{font:13px sans-serif;fill:#333}"
    ".legend span{display:inline-block;margin-right:14px}"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}";

int cgr_print_html(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(o,
          "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>capguard report</title>\n<style>%s</style></head><body>\n",
          CSS);
  fputs("<h1>capguard report</h1>\n<p class=\"sum\">", o);
  for (size_t i = 0; i < rows->n_files; i++) {
    fputs(i ? ", " : "logs: ", o);
    esc(o, rows->files[i]);
  }
  size_t calls = a->calls, loads = a->events[CG_EV_MODULE_LOAD], unloads = a->events[CG_EV_MODULE_UNLOAD];
  /* the processes that used CUDA, when some did, as the text report counts
   * them: a JIT's compiler steps (sh, gcc, as) are in the Processes table */
  size_t cuda = 0;
  for (size_t p = 0; p < rows->n_procs; p++)
    cuda += rows->procs[p].cuda;
  size_t procs = cuda ? cuda : rows->n_procs;
  fprintf(o, "<br>%zu process%s%s, %zu capture%s, <span class=\"%s\">%zu broken</span>", procs,
          cg_plural_es(procs), cuda && cuda < rows->n_procs ? " with CUDA" : "", a->captures,
          cg_plural(a->captures), a->n_broken ? "bad" : "good", a->n_broken);
  if (a->ended_early)
    fprintf(o, ", <span class=\"bad\">%zu ended without an exit record</span>", a->ended_early);
  if (a->n_stale_reads) /* silent corruption: as red as a broken capture */
    fprintf(o, ", <span class=\"bad\">%zu stale read%s</span>", a->n_stale_reads,
            cg_plural(a->n_stale_reads));
  fprintf(o, "; %zu call%s during capture (%zu module load%s, %zu unload%s", calls, cg_plural(calls), loads,
          cg_plural(loads), unloads, cg_plural(unloads));
  /* the other kinds of call, in the schema's words, when they happened */
  for (unsigned k = 0; k <= CG_EV_KIND_COUNT; k++)
    if (k != CG_EV_MODULE_LOAD && k != CG_EV_MODULE_UNLOAD && a->events[k])
      fprintf(o, ", %s %zu", k < CG_EV_KIND_COUNT ? cg_event_kind_name(k) : "other", a->events[k]);
  fputc(')', o);
  if (a->repeats)
    fprintf(o, "; %zu more like one logged (repeats), not logged again", a->repeats);
  if (a->n_runs > 1 && a->shown_run != SIZE_MAX)
    fprintf(o, "<br>the latest of %zu runs in the logs (capguard report --all for every run)", a->n_runs);
  fputs("</p>\n", o);
  if (rows->malformed) {
    fprintf(o, "<p class=\"warn\">%zu malformed line%s skipped (first: ", rows->malformed,
            cg_plural(rows->malformed));
    esc(o, rows->first_malformed);
    fputs(")</p>\n", o);
  }
  if (rows->cut_files)
    fprintf(o,
            "<p class=\"bad\">The log is cut short: the last line of %zu file%s ends without a "
            "newline (the file was truncated, or a writer was killed mid-line); counts are lower "
            "bounds.</p>\n",
            rows->cut_files, cg_plural(rows->cut_files));
  if (a->log_incomplete)
    fputs("<p class=\"bad\">The log is incomplete: a process could not write all its lines "
          "(full disk or I/O error); counts are lower bounds.</p>\n",
          o);
  /* the sections in the page's order (sections.c): the verdict (the summary
   * above) and what to do in the first screen, the timeline and tables after */
  cgr_sections_html(o, rep);
  fputs("</body></html>\n", o);
  return ferror(o) ? -1 : 0;
}
