/* The kernels loaded during capture, deduplicated, with their loads and those served. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "json_rows.h"
#include "html_cells.h"
#include "kernel_display.h"
#include "capguard/log_keys.h"

static void print_kernels(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  fprintf(out,
          "\n%sKernels loaded during capture%s (deduplicated; loads: load calls during "
          "capture whose image held it; served: of those, from the priming file)\n",
          pal.bold, pal.reset);
  fprintf(out, "  %5s  %6s  %s\n", "loads", "served", "kernel");
  /* A template's instances read alike: a run of them with the same counts
   * is one row, which says how many (the page's title tells them apart). */
  char disp[CG_KERNEL_DISPLAY_MAX], next[CG_KERNEL_DISPLAY_MAX];
  for (size_t k = 0, j; k < a->n_kernels; k = j) {
    const cgr_kernel *kk = &a->kernels[k];
    cg_kernel_display(kk->name, disp, sizeof disp);
    for (j = k + 1;
         j < a->n_kernels && a->kernels[j].loads == kk->loads && a->kernels[j].served == kk->served &&
         !strcmp(cg_kernel_display(a->kernels[j].name, next, sizeof next), disp);
         j++)
      ;
    fprintf(out, "  %5zu  %6zu  %s", kk->loads, kk->served, disp);
    if (j - k > 1)
      fprintf(out, " (%zu instances)", j - k);
    fputc('\n', out);
  }
}

static json_t *kernels_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  json_t *kernels = json_array();
  for (size_t k = 0; k < a->n_kernels; k++) {
    char site[512];
    cgl_event_site(&rows->evs[a->kernels[k].first_event], site, sizeof site);
    json_array_append_new(kernels, json_pack("{s:o, s:I, s:I, s:o, s:b}", "name", jtext(a->kernels[k].name),
                                             "loads", (json_int_t)a->kernels[k].loads, "served",
                                             (json_int_t)a->kernels[k].served, "site", jtext(site),
                                             "broke_capture", a->kernels[k].broke));
  }
  return kernels;
}

void cgr_kernels_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->a.n_kernels)
    print_kernels(out, rep, pal);
}

void cgr_kernels_json(json_t *root, const cgr_report *rep) {
  json_object_set_new(root, CG_KEY_KERNELS, kernels_json(rep));
}

void cgr_kernels_html(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  if (a->n_kernels) {
    fputs("<h2>Kernels loaded during capture</h2>\n<table><tr><th>loads</th><th>served</th>"
          "<th>kernel</th></tr>\n",
          o);
    for (size_t k = 0; k < a->n_kernels; k++) {
      fprintf(o, "<tr><td class=\"n\">%zu</td><td class=\"n\">%zu</td><td><code>", a->kernels[k].loads,
              a->kernels[k].served);
      cgr_html_kernel_name(o, a->kernels[k].name);
      fputs("</code></td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
}
