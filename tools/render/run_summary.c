/* run_summary.h. Prints what it is handed: the command read the log, built
 * the report and asked the findings table (cmd/run_end.c). */
#include "run_summary.h"

#include <string.h>

#include "cli.h"
#include "ended_early.h"
#include "plural.h"
#include "sections.h"
#include "report_render.h"
#include "rerun_command.h"
#include "run_broken.h"

/* One line that says, in words, why the first broken capture broke, when the
 * call that broke it is logged (its kernels, the driver's rule); the
 * "broken:" lines above name the offender of each, or say none was seen. */
static void why_line(FILE *out, const cgr_report *r, cg_palette pal) {
  const cgr_analysis *a = &r->a;
  if (!a->n_broken)
    return;
  char more[64] = "";
  if (a->n_broken > 1)
    snprintf(more, sizeof more, "%zu captures broke; the first ", a->n_broken);
  long f = a->broken[0].first_event;
  const cgl_capture *c = &r->rows.caps[a->broken[0].capture];
  if (f < 0 || (c->by == CGL_BY_CALL && r->rows.evs[f].call != cgl_capture_offender(c)->call))
    return;
  const cgl_event *e = &r->rows.evs[f];
  char why[256], kernels[160];
  cgr_why(e, why, sizeof why);
  cgr_kernel_list(e, 3, kernels, sizeof kernels);
  fprintf(out, "capguard: %swhy:%s %s%s in pid %lld when it called %s%s%s%s: %s\n", pal.bold, pal.reset, more,
          a->n_broken > 1 ? "broke" : "a capture broke", r->rows.procs[e->proc].pid, e->call ? e->call : "?",
          kernels[0] ? " (kernels " : "", kernels, kernels[0] ? ")" : "", why);
}

/* What to do next, and what else the findings table says to a run. */
static void findings_lines(FILE *out, const cgr_run_advice *adv, cg_palette pal) {
  const struct {
    const cgf_list *l;
    const char *label;
  } parts[] = {{&adv->next, "next:"}, {&adv->faster, "faster:"}, {&adv->note, "note:"}};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    for (size_t k = 0; k < parts[i].l->n; k++) {
      char first[64];
      snprintf(first, sizeof first, "capguard: %s%s%s ", pal.bold, parts[i].label, pal.reset);
      cgf_print(out, &parts[i].l->v[k], first, "  ");
    }
  }
}

/* What the findings table says on a line of its own after the broken
 * captures (work that escaped a capture, captures open at exit). */
static void said_lines(FILE *out, const cgf_list *said, cg_palette pal) {
  for (size_t i = 0; i < said->n; i++) {
    const cgf_finding *x = &said->v[i];
    const char *on = x->emphasis ? pal.bold : "", *off = x->emphasis ? pal.reset : "";
    fprintf(out, "capguard: %s%.*s%s%s\n", on, (int)x->emphasis, x->sentence, off, x->sentence + x->emphasis);
  }
}

/* The counts: processes, captures, calls during capture by kind and verdict. */
static void counts_line(FILE *out, const cgr_report *r, cg_palette pal) {
  const cgr_analysis *a = &r->a;
  char open[64] = "";
  if (a->open_at_exit)
    snprintf(open, sizeof open, ", %zu open at exit", a->open_at_exit);
  char stale[64] = "";
  if (a->n_stale_reads)
    snprintf(stale, sizeof stale, ", %s%zu stale read%s%s", pal.red, a->n_stale_reads,
             cg_plural(a->n_stale_reads), pal.reset);
  /* a process that ended without its exit record may have had a capture open: "logged" */
  fprintf(out,
          "capguard: %zu process%s used CUDA, %zu capture%s%s, %s%zu broken%s%s%s; %zu call%s "
          "during capture (",
          r->cuda, cg_plural_es(r->cuda), a->captures, cg_plural(a->captures),
          a->ended_early ? " logged" : "", a->n_broken ? pal.red : "", a->n_broken,
          a->n_broken ? pal.reset : "", stale, open, a->calls, cg_plural(a->calls));
  cgr_print_event_counts(out, r);
  fputc(')', out);
  cgr_print_verdict_counts(out, r, ": ");
  fputc('\n', out);
}

static void analysed(FILE *out, const cg_run_summary_in *in, cg_palette pal) {
  const cgr_report *r = in->report;
  counts_line(out, r, pal);
  /* where the start-up's time went: "capture: 3,412 graphs in 41.2 s ..." */
  if (r->capture_time_line[0])
    fprintf(out, "capguard: %scapture:%s %s\n", pal.bold, pal.reset, r->capture_time_line);
  if (r->rows.malformed)
    fprintf(out, "capguard: %zu malformed log line%s skipped (first: %s)\n", r->rows.malformed,
            cg_plural(r->rows.malformed), r->rows.first_malformed);
  if (*in->incomplete)
    fprintf(out, "capguard: %sthe log is incomplete:%s %s; the counts above are lower bounds\n", pal.red,
            pal.reset, in->incomplete);
  cg_run_broken_lines(out, r, pal);
  cgr_print_ranks_text(out, r, pal, "capguard: ");
  said_lines(out, &in->adv->said, pal);
  why_line(out, r, pal);
  /* prime learn and check say what to do, where the log is, and keep it or not */
  if (in->verdict_follows)
    return;
  findings_lines(out, in->adv, pal);
  /* The command that reads it, alone on its line: with %p, the pattern itself
   * (capguard report reads every file it names). A temporary log is kept for
   * that command: it is removed only when it holds nothing. */
  char word[4200] = "";
  size_t used = 0;
  cgr_shell_word(in->shown_path, word, sizeof word, &used);
  fprintf(out, "capguard: %slog: %s%s; details:%s\n", pal.dim, in->shown,
          in->temporary ? " (a temporary file, kept for the command below: delete it when done)" : "",
          pal.dim[0] ? pal.reset : "");
  fprintf(out, "  %s report %s\n", cgr_self_word(), word);
}

void cg_run_summary_print(FILE *out, const cg_run_summary_in *in) {
  cg_palette pal = cg_palette_for(out);
  /* First, whatever the log holds: the log of a killed command may hold nothing. */
  if (in->signal) {
    char words[48];
    cgr_signal_words(in->signal, words, sizeof words);
    fprintf(out, "capguard: %sthe command (pid %lld) was killed by %s%s\n", pal.red, in->pid, words,
            pal.reset);
  }
  if (!in->report) {
    if (in->nothing)
      fprintf(out, "capguard: %s\n", in->nothing);
    return;
  }
  analysed(out, in, pal);
}
