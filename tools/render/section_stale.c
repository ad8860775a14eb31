/* report_stale.h. A group is one (process, graph exec, allocation): the
 * shim reports each at most once per kind, so a group holds a free, a
 * launch, or both (meaning/stale_groups.c groups them); what to do is the
 * findings table's sentence, which the report holds for each group. */
#include "sections.h"
#include "html_text.h"
#include "kernel_display.h"
#include "plural.h"

#include <stdlib.h>
#include <string.h>

#include "capguard/event.h"
#include "capguard/log_keys.h"
#include "log_pool.h"

static const char * or (const char *s, const char *dflt) { return s && *s ? s : dflt; }

/* "kernel k, argument i" of the group's first event. */
static void reader_words(const cgl_stale *s, char *buf, size_t cap) {
  char disp[CG_KERNEL_DISPLAY_MAX];
  const char *k = s->kernel && *s->kernel ? cg_kernel_display(s->kernel, disp, sizeof disp) : NULL;
  snprintf(buf, cap, "kernel %s, argument %lld%s", or (k, "(name unknown)"), s->arg,
           s->reads > 1 ? " (and more reads by this exec)" : "");
}

void cgr_stale_text(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_rows *rows = &rep->rows;
  const cgr_stale_group *g = rep->stale_groups;
  size_t n = rep->n_stale_groups;
  if (!n)
    return;
  fprintf(out, "\n%sMemory a live graph reads, freed%s (%zu graph exec%s and allocation%s)\n", pal.bold,
          pal.reset, n, cg_plural(n), cg_plural(n));
  for (size_t i = 0; i < n; i++) {
    const cgl_stale *s = &rows->stale[g[i].first];
    char reads[256];
    reader_words(s, reads, sizeof reads);
    fprintf(out, "  %sgraph exec %s%s (pid %lld, %s%s): %s %s, %lld bytes: %s\n", pal.red, s->exec, pal.reset,
            rows->procs[s->proc].pid, s->by_hand ? "built by hand" : "captured at ",
            s->by_hand ? "" : or (s->began, "an unknown site"), s->piece ? "mapped piece" : "allocation",
            s->start, s->size, reads);
    if (g[i].first_free >= 0) {
      const cgl_stale *f = &rows->stale[g[i].first_free];
      fprintf(out, "    freed by %s at %s\n", f->call, or (f->site, "?"));
    }
    if (g[i].first_launch >= 0) {
      const cgl_stale *l = &rows->stale[g[i].first_launch];
      fprintf(out, "    replayed by %s at %s after the memory was %s\n", l->call, or (l->site, "?"),
              l->piece           ? (l->now_buffer_id ? "mapped to another physical allocation" : "unmapped")
              : l->now_buffer_id ? "freed and allocated again as another buffer"
                                 : "freed");
    }
    fprintf(out, "    what to do: %s\n", g[i].advice);
  }
}

static json_t *jtext(const char *s) { return cgl_json_text(s ? s : ""); }

static json_t *event_json(const cgl_stale *s) {
  return json_pack("{s:o, s:o, s:o, s:I}", CG_KEY_CALL, jtext(s->call), "site", jtext(s->site), CG_KEY_PYTHON,
                   s->python_top ? jtext(s->python_top) : json_null(), CG_KEY_NOW_BUFFER_ID,
                   (json_int_t)s->now_buffer_id);
}

static json_t *stale_json(const cgr_report *rep) {
  json_t *arr = json_array();
  const cgr_rows *rows = &rep->rows;
  const cgr_stale_group *g = rep->stale_groups;
  size_t n = rep->n_stale_groups;
  for (size_t i = 0; i < n; i++) {
    const cgl_stale *s = &rows->stale[g[i].first];
    json_t *o = json_pack("{s:I, s:o, s:o, s:I, s:I, s:o, s:I, s:I, s:b, s:I, s:o}", CG_KEY_PID,
                          (json_int_t)rows->procs[s->proc].pid, CG_KEY_EXEC, jtext(s->exec), CG_KEY_START,
                          jtext(s->start), CG_KEY_SIZE, (json_int_t)s->size, CG_KEY_BUFFER_ID,
                          (json_int_t)s->buffer_id, CG_KEY_KERNEL, jtext(s->kernel), CG_KEY_ARG,
                          (json_int_t)s->arg, CG_KEY_READS, (json_int_t)s->reads, CG_KEY_BY_HAND, s->by_hand,
                          CG_KEY_CAPTURE, (json_int_t)s->capture_id, CG_KEY_BEGAN, jtext(s->began));
    json_object_set_new(o, "freed_by",
                        g[i].first_free >= 0 ? event_json(&rows->stale[g[i].first_free]) : json_null());
    json_object_set_new(o, "replayed_by",
                        g[i].first_launch >= 0 ? event_json(&rows->stale[g[i].first_launch]) : json_null());
    json_object_set_new(o, "what_to_do", jtext(g[i].advice));
    json_array_append_new(arr, o);
  }
  return arr;
}

static void esc(FILE *o, const char *s) { cgr_html_text(o, s); }

void cgr_stale_html(FILE *o, const cgr_report *rep) {
  const cgr_rows *rows = &rep->rows;
  const cgr_stale_group *g = rep->stale_groups;
  size_t n = rep->n_stale_groups;
  if (!n)
    return;
  fputs("<h2>Memory a live graph reads, freed</h2>\n<table><tr><th>graph exec</th><th>captured at</th>"
        "<th>allocation</th><th>read by</th><th>freed by</th><th>replayed by</th><th>what to do</th></tr>\n",
        o);
  for (size_t i = 0; i < n; i++) {
    const cgl_stale *s = &rows->stale[g[i].first];
    char reads[256];
    reader_words(s, reads, sizeof reads);
    fputs("<tr><td>", o);
    esc(o, s->exec);
    fputs("</td><td>", o);
    esc(o, s->by_hand ? "(built by hand)" : or (s->began, "?"));
    fputs("</td><td>", o);
    esc(o, s->start);
    fprintf(o, ", %lld bytes</td><td>", s->size);
    esc(o, reads);
    fputs("</td><td>", o);
    if (g[i].first_free >= 0) {
      esc(o, rows->stale[g[i].first_free].call);
      fputs(" at ", o);
      esc(o, rows->stale[g[i].first_free].site);
    }
    fputs("</td><td>", o);
    if (g[i].first_launch >= 0) {
      esc(o, rows->stale[g[i].first_launch].call);
      fputs(" at ", o);
      esc(o, rows->stale[g[i].first_launch].site);
    }
    fputs("</td><td>", o);
    esc(o, g[i].advice);
    fputs("</td></tr>\n", o);
  }
  fputs("</table>\n", o);
}

void cgr_stale_trace(json_t *evs, const cgr_report *rep, long long t0) {
  const cgr_rows *rows = &rep->rows;
  for (size_t i = 0; i < rows->n_stale; i++) {
    const cgl_stale *s = &rows->stale[i];
    double ts = cgr_trace_us(s->time_ns, t0);
    char name[160];
    snprintf(name, sizeof name, "%s stale", s->call);
    json_array_append_new(
        evs, json_pack("{s:s, s:s, s:s, s:o, s:f, s:I, s:I, s:{s:s, s:o, s:o, s:o, s:I, s:o, s:o}}", "ph",
                       "i", "s", "t", "cat", "stale", "name", jtext(name), "ts", ts, "pid",
                       (json_int_t)rows->procs[s->proc].pid, "tid", (json_int_t)s->tid, "args", CG_KEY_EVENT,
                       cg_event_kind_name(s->kind), CG_KEY_EXEC, jtext(s->exec), CG_KEY_START,
                       jtext(s->start), CG_KEY_KERNEL, jtext(s->kernel), CG_KEY_ARG, (json_int_t)s->arg,
                       "site", jtext(s->site), CG_KEY_BEGAN, jtext(s->began)));
  }
}

void cgr_stale_json(json_t *root, const cgr_report *rep) {
  json_object_set_new(root, CG_KEY_STALE, stale_json(rep));
}
