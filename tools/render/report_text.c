/* The text report's frame: its headline and counts, then the sections in
 * the text's order (sections.c). */
#include "report_render.h"
#include "plural.h"
#include "sections.h"

/* Module loads and unloads always (what priming is about: "0 loads" is news),
 * the other kinds when they happened (eight zeros would bury the line). */
void cgr_print_event_counts(FILE *out, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  for (unsigned k = 0; k < CG_EV_KIND_COUNT; k++)
    if (k == CG_EV_MODULE_LOAD || k == CG_EV_MODULE_UNLOAD || a->events[k])
      fprintf(out, "%s%s %zu", k ? ", " : "", cg_event_kind_name(k), a->events[k]);
  if (a->events[CG_EV_KIND_COUNT])
    fprintf(out, ", other %zu", a->events[CG_EV_KIND_COUNT]);
}

/* Only the verdicts that happened: zeros are noise to someone reading this the first time. */
void cgr_print_verdict_counts(FILE *out, const cgr_report *rep, const char *lead) {
  const cgr_analysis *a = &rep->a;
  bool any = false;
  for (unsigned v = 0; v <= CG_VERDICT_COUNT; v++)
    if (a->verdicts[v]) {
      fprintf(out, "%s%s %zu", any ? ", " : lead, v < CG_VERDICT_COUNT ? cg_verdict_name(v) : "other",
              a->verdicts[v]);
      any = true;
    }
}

void cgr_print_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  /* The processes that used CUDA, when some did: a JIT's compiler steps
   * (sh, gcc, as) are one line of their own under Processes. */
  size_t cuda = 0;
  for (size_t p = 0; p < rows->n_procs; p++)
    cuda += rows->procs[p].cuda;
  size_t procs = cuda ? cuda : rows->n_procs;
  fprintf(out, "capguard report: %zu log%s, %zu process%s%s, %zu capture%s%s, %s%zu broken%s", rows->n_files,
          cg_plural(rows->n_files), procs, cg_plural_es(procs),
          cuda && cuda < rows->n_procs ? " with CUDA" : "", a->captures, cg_plural(a->captures),
          a->ended_early ? " logged" : "", a->n_broken ? pal.red : pal.green, a->n_broken, pal.reset);
  if (a->open_at_exit)
    fprintf(out, ", %s%zu open at exit%s", pal.yellow, a->open_at_exit, pal.reset);
  if (a->ended_early)
    fprintf(out, ", %s%zu ended without an exit record%s", pal.red, a->ended_early, pal.reset);
  if (a->n_stale_reads)
    fprintf(out, ", %s%zu stale read%s%s", pal.red, a->n_stale_reads, cg_plural(a->n_stale_reads), pal.reset);
  fputc('\n', out);
  fprintf(out, "calls during capture: %zu (", a->calls);
  cgr_print_event_counts(out, rep);
  fputc(')', out);
  cgr_print_verdict_counts(out, rep, "; verdicts: ");
  fputc('\n', out);
  if (a->repeats)
    fprintf(out,
            "repeats: %zu more call%s during capture like one logged (same call, verdict and "
            "site): counted in the capture records, not above\n",
            a->repeats, cg_plural(a->repeats));
  if (rows->malformed)
    fprintf(out, "%zu malformed log line%s skipped (first: %s)\n", rows->malformed,
            cg_plural(rows->malformed), rows->first_malformed);
  if (rows->cut_files)
    fprintf(out,
            "%sthe log is cut short%s: the last line of %zu file%s ends without a newline "
            "(the file was truncated, or a writer was killed mid-line); counts are lower bounds\n",
            pal.red, pal.reset, rows->cut_files, cg_plural(rows->cut_files));
  if (a->log_incomplete)
    fprintf(out,
            "%sthe log is incomplete%s: a process could not write all its lines (full disk "
            "or I/O error); counts are lower bounds\n",
            pal.red, pal.reset);
  cgr_sections_text(out, rep, pal);
}
