/* The processes that used CUDA and ended without an exit record, each with the last thing it logged. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "html_cells.h"
#include "html_text.h"
#include "plural.h"
#include "process_command.h"
#include "ended_early.h"

/* Every process that used CUDA and wrote no exit record, each with its last line's time. */
static void print_ended(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(out,
          "\n%sEnded without an exit record%s (killed, crashed, left through _exit, still "
          "running, or cut from the log: what each did after its last line is not in the log)\n",
          pal.bold, pal.reset);
  for (size_t p = 0; p < rows->n_procs; p++) {
    const cgl_process *pr = &rows->procs[p];
    if (!cgr_ended_early(pr))
      continue;
    char who[256], cmd[96];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(pr, cmd, sizeof cmd);
    char last[1024], sig[64] = "";
    cgr_report_ended_last(rep, p, last, sizeof last);
    if (cgl_process_rare(pr)->signal) { /* capguard run's "ended" record */
      char words[40];
      cgr_signal_words(cgl_process_rare(pr)->signal, words, sizeof words);
      snprintf(sig, sizeof sig, ", killed by %s", words);
    }
    if (!cgr_proc_captures(a, p) &&
        !a->procs[p].calls) /* not "0 captures": one open when it ended is not logged */
      fprintf(out,
              "  %s %s%s: no capture and no call during capture logged (a capture still open when it "
              "ended is not)\n    last logged: %s\n",
              who, cmd[0] ? cmd : "?", sig, last);
    else
      fprintf(out, "  %s %s%s: %zu capture%s, %zu call%s during capture logged\n    last logged: %s\n", who,
              cmd[0] ? cmd : "?", sig, cgr_proc_captures(a, p), cg_plural(cgr_proc_captures(a, p)),
              (size_t)a->procs[p].calls, cg_plural(a->procs[p].calls), last);
  }
}

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

/* The processes that used CUDA and left no exit record (killed, crashed,
 * _exit, still running, cut from the log), as the text report lists them:
 * which pid, what it was, and the last thing it logged. */
static void ended_table(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  fprintf(o,
          "<h2 class=\"bad\">Ended without an exit record</h2>\n<p>%zu process%s that used CUDA "
          "wrote no exit record: killed, crashed, left through _exit, still running, or cut from "
          "the log. What each did after its last line is not in the log; the signal that "
          "killed one is known when capguard run saw it kill its command.</p>\n<table><tr>"
          "<th>process</th><th>command</th><th>how it ended</th><th>captures</th>"
          "<th>calls during capture</th><th>last logged</th></tr>\n",
          a->ended_early, cg_plural_es(a->ended_early));
  size_t said = 0;
  for (size_t p = 0; p < rows->n_procs; p++) {
    if (!cgr_ended_early(&rows->procs[p]))
      continue;
    if (said++ == CGR_HTML_MAX_ROWS)
      break;
    char who[256], cmd[160], last[1024];
    cgr_report_process_label(rep, p, who, sizeof who);
    cgr_process_command(&rows->procs[p], cmd, sizeof cmd);
    cgr_report_ended_last(rep, p, last, sizeof last);
    fputs("<tr><td class=\"bad\">", o);
    esc(o, who);
    fputs("</td><td><code>", o);
    esc(o, cmd[0] ? cmd : "?");
    fputs("</code></td><td>", o);
    if (cgl_process_rare(&rows->procs[p])->signal) { /* capguard run's "ended" record */
      char words[40];
      cgr_signal_words(cgl_process_rare(&rows->procs[p])->signal, words, sizeof words);
      fputs("killed by ", o);
      esc(o, words);
    } else {
      fputs("not in the log", o);
    }
    fprintf(o, "</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td>", cgr_proc_captures(a, p),
            (size_t)a->procs[p].calls);
    esc(o, last);
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  if (a->ended_early > CGR_HTML_MAX_ROWS)
    fprintf(o, "<p>and %zu more (capguard report lists them all)</p>\n", a->ended_early - CGR_HTML_MAX_ROWS);
}

void cgr_ended_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->a.ended_early)
    print_ended(out, rep, pal);
}

void cgr_ended_html(FILE *o, const cgr_report *rep) {
  if (rep->a.ended_early)
    ended_table(o, rep);
}
