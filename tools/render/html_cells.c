/* html_cells.h. */
#include "html_cells.h"

#include <string.h>

#include "html_text.h"
#include "kernel_display.h"

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }
static const char *cgr_or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* A verdict's colour in the timeline and the tables. No default: a verdict
 * row added to log_schema.h without a colour here is a -Wswitch error. A
 * word this reader does not know (a newer capguard's) is grey. */
const char *cgr_html_verdict_colour(cg_verdict v) {
  switch (v) {
  case CG_VERDICT_REFUSED:
    return "#d62728";
  case CG_VERDICT_ALLOWED:
    return "#ff7f0e";
  case CG_VERDICT_EMULATED:
    return "#e7298a";
  case CG_VERDICT_SERVED:
    return "#1f77b4";
  case CG_VERDICT_RESCUED:
    return "#9467bd";
  case CG_VERDICT_DEFERRED:
    return "#7f7f7f";
  case CG_VERDICT_FAILED:
    return "#8c564b";
  case CG_VERDICT_DEFERRED_FREE:
    return "#bcbd22";
  case CG_VERDICT_DEFERRED_DESTROY:
    return "#393b79";
  case CG_VERDICT_NOT_READY:
    return "#17becf";
  case CG_VERDICT_ESCAPED:
    return "#ffbb78";
  case CG_VERDICT_BROKE:
    return "#1a1a1a";
  case CG_VERDICT_STALE:
    return "#4d004b";
  case CG_VERDICT_WAITING:
    return "#637939";
  case CG_VERDICT_COUNT:
    break;
  }
  return "#888";
}

const char *cgr_html_verdict_word(cg_verdict v) { return cgr_or(cgl_word(&cg_verdicts, v), "?"); }

/* A kernel's display form, its exact symbol in the title (on hover) when they differ. */
void cgr_html_kernel_name(FILE *o, const char *name) {
  char disp[CG_KERNEL_DISPLAY_MAX];
  cg_kernel_display(name, disp, sizeof disp);
  if (!strcmp(disp, name)) {
    esc(o, name);
    return;
  }
  fputs("<span title=\"", o);
  esc(o, name);
  fputs("\">", o);
  esc(o, disp);
  fputs("</span>", o);
}

void cgr_html_kernel_cell(FILE *o, const cgl_event *e) {
  for (size_t k = 0; k < e->kernels->n; k++) {
    if (k)
      fputs("<br>", o);
    cgr_html_kernel_name(o, e->kernels->v[k]);
  }
}

void cgr_html_more_rows(FILE *o, size_t total, const char *what) {
  if (total > CGR_HTML_MAX_ROWS)
    fprintf(o, "<p>and %zu more %s (capguard report --json lists them all)</p>\n", total - CGR_HTML_MAX_ROWS,
            what);
}
