/* What to do: the findings table's advice the report holds, or each run's with --all. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "json_rows.h"
#include "html_text.h"
#include "findings.h"
#include "process_command.h"

void cgr_advice_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  fprintf(out, "\n%sWhat to do%s\n", pal.bold, pal.reset);
  if (!a->run_advice) {
    for (size_t i = 0; i < a->advice.n; i++)
      cgf_print(out, &a->advice.v[i], "  - ", "      ");
    return;
  }
  /* --all: each run's own advice under its name */
  for (size_t r = 0; r < a->n_runs; r++) {
    const cgl_process *top = &rep->whole.procs[rep->whole.runs[r].first_proc];
    char cmd[96];
    cgr_process_command(top, cmd, sizeof cmd);
    fprintf(out, "  run %zu: pid %lld %s\n", r + 1, top->pid, cmd[0] ? cmd : "?");
    for (size_t i = 0; i < a->run_advice[r].n; i++)
      cgf_print(out, &a->run_advice[r].v[i], "    - ", "        ");
  }
}

void cgr_advice_json(json_t *root, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  /* Several runs reported: the advice is each run's, in runs[] (the text
   * report gives it under each run); one list for all would mix them. */
  if (!a->run_advice) {
    json_object_set_new(root, "advice", cgr_json_advice(&a->advice));
    json_object_set_new(root, "findings", cgr_json_findings(&a->advice));
  }
}

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

/* One finding: its sentence, then each command on a line of its own. */
static void advice_item(FILE *o, const cgf_finding *x) {
  fputs("<li>", o);
  esc(o, x->sentence);
  if (x->n_commands)
    fputc(':', o);
  for (size_t k = 0; k < x->n_commands; k++) {
    if (x->commands[k].lead) {
      fputs("<br>", o);
      esc(o, x->commands[k].lead);
      fputc(':', o);
    }
    fputs("<pre class=\"cmd\"><code>", o);
    esc(o, x->commands[k].text);
    fputs("</code></pre>", o);
    if (x->commands[k].note) {
      fputc('(', o);
      esc(o, x->commands[k].note);
      fputc(')', o);
    }
  }
  fputs("</li>\n", o);
}

/* What to do: with --all over several runs, each run's advice under its run. */
static void advice_section(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  fputs("<h2 id=\"what-to-do\">What to do</h2>\n", o);
  if (!a->run_advice) {
    fputs("<ul>\n", o);
    for (size_t i = 0; i < a->advice.n; i++)
      advice_item(o, &a->advice.v[i]);
    fputs("</ul>\n", o);
    return;
  }
  for (size_t r = 0; r < a->n_runs; r++) {
    const cgl_process *top = &rep->whole.procs[rep->whole.runs[r].first_proc];
    char cmd[96];
    cgr_process_command(top, cmd, sizeof cmd);
    fprintf(o, "<h3>run %zu: pid %lld ", r + 1, top->pid);
    esc(o, cmd);
    fputs("</h3>\n<ul>\n", o);
    for (size_t i = 0; i < a->run_advice[r].n; i++)
      advice_item(o, &a->run_advice[r].v[i]);
    fputs("</ul>\n", o);
  }
}

void cgr_advice_html(FILE *o, const cgr_report *rep) { advice_section(o, rep); }
