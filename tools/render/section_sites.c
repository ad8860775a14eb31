/* The call sites of the calls during capture, with the calls and kernels of each. */
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "capguard/log_keys.h"
#include "json_rows.h"
#include "html_cells.h"
#include "html_text.h"
#include "kernel_display.h"

static void print_sites(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  fprintf(out,
          "\n%sCall sites%s (Python frame first, else native; calls: calls during capture "
          "made there)\n",
          pal.bold, pal.reset);
  fprintf(out, "  %5s  %s\n", "calls", "site");
  for (size_t s = 0; s < a->n_sites; s++) {
    const cgr_site *st = &a->sites[s];
    fprintf(out, "  %5zu  %s  %s[", st->count, st->site, pal.dim);
    for (size_t i = 0; i < st->n_calls; i++)
      fprintf(out, "%s%s", i ? ", " : "", st->calls[i]);
    if (st->n_kernels) {
      fputs("; kernels:", out);
      char disp[CG_KERNEL_DISPLAY_MAX], prev[CG_KERNEL_DISPLAY_MAX] = "";
      size_t said = 0;
      for (size_t i = 0; i < st->n_kernels && i < 8; i++)
        if (cg_kernel_display_new(st->kernels[i], disp, prev))
          fprintf(out, "%s %s", said++ ? "," : "", disp);
      if (st->n_kernels > 8)
        fprintf(out, " and %zu more", st->n_kernels - 8);
    }
    fprintf(out, "]%s\n", pal.reset);
  }
}

static json_t *sites_json(const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  json_t *sites = json_array();
  for (size_t s = 0; s < a->n_sites; s++) {
    const cgr_site *st = &a->sites[s];
    json_t *calls = json_array(), *names = json_array();
    for (size_t i = 0; i < st->n_calls; i++)
      json_array_append_new(calls, jtext(st->calls[i]));
    for (size_t i = 0; i < st->n_kernels; i++)
      json_array_append_new(names, jtext(st->kernels[i]));
    json_array_append_new(sites, json_pack("{s:o, s:I, s:o, s:o}", "site", jtext(st->site), "count",
                                           (json_int_t)st->count, "calls", calls, CG_KEY_KERNELS, names));
  }
  return sites;
}

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

void cgr_sites_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  if (rep->a.n_sites)
    print_sites(out, rep, pal);
}

void cgr_sites_json(json_t *root, const cgr_report *rep) {
  json_object_set_new(root, "sites", sites_json(rep));
}

void cgr_sites_html(FILE *o, const cgr_report *rep) {
  const cgr_analysis *a = &rep->a;
  if (a->n_sites) {
    fputs("<h2>Call sites</h2>\n<table><tr><th>calls</th><th>site</th><th>functions</th>"
          "<th>kernels</th></tr>\n",
          o);
    for (size_t s = 0; s < a->n_sites; s++) {
      const cgr_site *st = &a->sites[s];
      fprintf(o, "<tr><td class=\"n\">%zu</td><td><code>", st->count);
      esc(o, st->site);
      fputs("</code></td><td>", o);
      for (size_t i = 0; i < st->n_calls; i++) {
        if (i)
          fputs(", ", o);
        esc(o, st->calls[i]);
      }
      fputs("</td><td><code>", o);
      for (size_t i = 0; i < st->n_kernels; i++) {
        if (i)
          fputs("<br>", o);
        cgr_html_kernel_name(o, st->kernels[i]);
      }
      fputs("</code></td></tr>\n", o);
    }
    fputs("</table>\n", o);
  }
}
