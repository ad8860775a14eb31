#include "sections.h"
#include "capguard/log_keys.h"
#include "html_text.h"

#include <stdbool.h>

#include "log_pool.h" /* cgl_json_text */
#include "plural.h"
#include "rank_view.h"

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

bool cgr_print_ranks_text(FILE *out, const cgr_report *rep, cg_palette pal, const char *indent) {
  const cgr_rows *rows = &rep->rows;
  const cgr_rank_view *v = &rep->ranks;
  if (v->n < 2)
    return false;
  long long world = cgr_rank_row_world(v, &v->rows[0]);
  fprintf(out, "%s%s%sRanks%s (%zu", *indent ? "" : "\n", indent, pal.bold, pal.reset, v->n);
  if (world > 0)
    fprintf(out, " of a world of %lld", world);
  fprintf(out, ")\n%s  %-5s %-8s %-8s %-8s %-6s %s\n", indent, "rank", "pid", "captures", "captured",
          "broken", "first offender");
  for (size_t i = 0; i < v->n; i++) {
    const cgr_rank_row *r = &v->rows[i];
    char off[384];
    cgr_rank_row_offender(v, r, off, sizeof off);
    fprintf(out, "%s  %-5lld %-8lld %-8zu %-8zu %s%-6zu%s %s\n", indent, cgr_rank_row_rank(v, r),
            rows->procs[r->proc].pid, (size_t)r->captures, (size_t)r->captured,
            r->broken ? pal.red : pal.green, (size_t)r->broken, pal.reset, off[0] ? off : "-");
  }
  if (v->n_diffs) {
    fprintf(out, "%sDifferences between ranks (NCCL needs every rank to capture the same work)\n", indent);
    for (size_t i = 0; i < v->n_diffs; i++)
      fprintf(out, "%s  %s%s%s\n", indent, pal.yellow, v->diffs[i], pal.reset);
    if (v->more_diffs)
      fprintf(out, "%s  and %zu more difference%s\n", indent, v->more_diffs, cg_plural(v->more_diffs));
  } else if (v->any_broken) {
    fprintf(out, "%sNo difference between the ranks' counts, but they broke captures (above).\n", indent);
  } else {
    fprintf(out, "%sThe ranks captured alike.\n", indent);
  }
  return true;
}

static json_t *ranks_json(const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  const cgr_rank_view *v = &rep->ranks;
  if (v->n < 2)
    return NULL;
  json_t *list = json_array(), *diffs = json_array();
  for (size_t i = 0; i < v->n; i++) {
    const cgr_rank_row *r = &v->rows[i];
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", CG_KEY_RANK, (json_int_t)cgr_rank_row_rank(v, r),
                          CG_KEY_PID, (json_int_t)rows->procs[r->proc].pid, CG_KEY_WORLD_SIZE,
                          (json_int_t)cgr_rank_row_world(v, r), CG_KEY_CAPTURES, (json_int_t)r->captures,
                          "captured", (json_int_t)r->captured, "broken", (json_int_t)r->broken);
    char off[384];
    cgr_rank_row_offender(v, r, off, sizeof off);
    json_object_set_new(o, "first_offender", off[0] ? cgl_json_text(off) : json_null());
    json_object_set_new(o, "first_broken_capture",
                        r->first_broken >= 0 ? json_integer((json_int_t)rows->caps[r->first_broken].id)
                                             : json_null());
    json_array_append_new(list, o);
  }
  for (size_t i = 0; i < v->n_diffs; i++)
    json_array_append_new(diffs, cgl_json_text(v->diffs[i]));
  json_t *o = json_pack("{s:o, s:o, s:I}", "ranks", list, "differences", diffs, "more_differences",
                        (json_int_t)v->more_diffs);
  return o;
}

void cgr_ranks_html(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  const cgr_rank_view *v = &rep->ranks;
  if (v->n < 2)
    return;
  fputs("<h2>Ranks</h2>\n<table><tr><th>rank</th><th>process</th><th>captures</th><th>captured</th>"
        "<th>broken</th><th>first offender</th></tr>\n",
        o);
  for (size_t i = 0; i < v->n; i++) {
    const cgr_rank_row *r = &v->rows[i];
    char off[384];
    cgr_rank_row_offender(v, r, off, sizeof off);
    fprintf(o, "<tr><td>%lld</td><td>pid %lld</td><td>%zu</td><td>%zu</td><td class=\"%s\">%zu</td><td>",
            cgr_rank_row_rank(v, r), rows->procs[r->proc].pid, (size_t)r->captures, (size_t)r->captured,
            r->broken ? "bad" : "good", (size_t)r->broken);
    esc(o, off[0] ? off : "-");
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
  if (v->n_diffs) {
    fputs("<p>Differences between ranks (NCCL needs every rank to capture the same work):</p>\n<ul>\n", o);
    for (size_t i = 0; i < v->n_diffs; i++) {
      fputs("<li class=\"warn\">", o);
      esc(o, v->diffs[i]);
      fputs("</li>\n", o);
    }
    if (v->more_diffs)
      fprintf(o, "<li>and %zu more</li>\n", v->more_diffs);
    fputs("</ul>\n", o);
  }
}

void cgr_ranks_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  cgr_print_ranks_text(out, rep, pal, ""); /* when the log holds a job of several ranks */
}

/* a job of several ranks side by side; absent otherwise */
void cgr_ranks_json(json_t *root, const cgr_report *rep) {
  json_t *ranks = ranks_json(rep);
  if (ranks)
    json_object_set_new(root, "ranks", ranks);
}
