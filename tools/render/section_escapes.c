/* Work that escaped a capture (verdict escaped), grouped by kind, call and site. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"

/* Work that escaped a capture (verdict escaped): the driver said ok, but the
 * graph will not do it (legacy-stream work run once, outside the graph) or
 * will read or write host memory as it is at replay (a captured copy to or
 * from pageable memory). Grouped by kind, call and site (the report's
 * escape groups), with how many were logged. */
static void print_escapes(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  fprintf(out,
          "\n%sEscaped captures%s (the driver said ok, the graph will not do what the program "
          "meant; calls: logged there)\n",
          pal.bold, pal.reset);
  fprintf(out, "  %5s  %-14s %-22s %s\n", "calls", "kind", "call", "site");
  for (size_t g = 0; g < rep->n_escapes; g++) {
    const cgl_event *e = rep->escapes[g].first;
    fprintf(out, "  %5zu  %-14s %-22s %s\n", rep->escapes[g].count, cg_event_kind_name(e->kind),
            e->call ? e->call : "?", e->site && e->site[0] ? e->site : "(unknown site)");
  }
  /* what each kind means to do: the findings table's, collected by the analysis */
  for (size_t i = 0; i < a->escapes_note.n; i++)
    fprintf(out, "  %s%s%s\n", pal.dim, a->escapes_note.v[i].sentence, pal.reset);
}

void cgr_escapes_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->a.verdicts[CG_VERDICT_ESCAPED])
    print_escapes(out, rep, pal);
}
