/* Captures still open when their process exited, that nothing broke. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"

static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* Captures their process never ended and nothing broke (the broken ones are
 * listed above): the process exited, or was killed, mid-capture. */
static void print_open(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_rows *rows = &rep->rows;
  fprintf(out, "\n%sOpen at exit%s (their process exited before ending them: no graph was made)\n", pal.bold,
          pal.reset);
  for (size_t c = 0; c < rows->n_caps; c++) {
    const cgl_capture *cp = &rows->caps[c];
    if (!cg_word_is(&cg_capture_statuses, cp->status, CG_WORD_OPEN) || cgr_report_capture_broken(rep, c))
      continue;
    char who[256];
    cgr_report_process_label(rep, cp->proc, who, sizeof who);
    fprintf(out, "  %s capture %lld (stream %s, %s, open at exit; began %s)\n", who, cp->id,
            or (cp->stream, "?"), or (cgl_word(&cg_capture_modes, cp->mode), "?"),
            or (cp->began, "where unknown"));
  }
}

void cgr_open_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->a.open_unbroken)
    print_open(out, rep, pal);
}
