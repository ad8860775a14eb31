#include "run_broken.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/capture_model.h"
#include "capguard/event.h"
#include "offender.h"
#include "plural.h"

static const char PREFIX[] = "capguard: ";

static int clamp_int(long long v) { return v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : (int)v; }
static uint64_t unsigned_of(long long v) { return v > 0 ? (uint64_t)v : 0; }

/* One capture, through the shim's own formatter so that both say it alike. */
static void one(FILE *out, const cgr_report *rep, size_t b, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  const cgr_rows *rows = &rep->rows;
  size_t ci = a->broken[b].capture;
  const cgl_capture *c = &rows->caps[ci];
  cg_capture cap = {.id = unsigned_of(c->id),
                    .stream = c->stream ? strtoull(c->stream, NULL, 16) : 0,
                    .tid = unsigned_of(c->tid),
                    .mode = c->mode,
                    .status = c->status};
  cgl_offender f;
  cgl_broken_by by = cgr_report_first_offender(rep, ci, a->broken[b].first_event, &f);
  /* the Python line when there is one: what a person edits (the report gives the native frame) */
  cg_offender off = {.call = by == CGL_BY_CALL ? f.call : NULL,
                     .kind = f.kind,
                     .verdict = f.verdict,
                     .result = clamp_int(f.result),
                     .tid = unsigned_of(f.tid),
                     .time_ns = unsigned_of(f.time_ns),
                     .python = by == CGL_BY_CALL ? f.python : NULL,
                     .where = by == CGL_BY_CALL ? cgr_offender_at(&f) : NULL};
  cg_capture_record r = {.capture = &cap,
                         .pid = unsigned_of(rows->procs[c->proc].pid),
                         .began = c->began,
                         .ended = c->has_end_result,
                         .end_result = clamp_int(cgl_capture_end_result(c)),
                         .repeats = unsigned_of(cgl_capture_repeats(c)),
                         .broken_by = by == CGL_BY_CALL ? &off : NULL};
  char phrase[1024];
  if (by == CGL_BY_UNKNOWN) { /* the log does not say: its own words, not "does not watch" */
    cgr_report_offender_phrase(rep, ci, a->broken[b].first_event, phrase, sizeof phrase);
    r.no_offender = phrase;
  }
  char line[4096];
  cg_capture_format_broken_text(&r, line, sizeof line);
  size_t n = strlen(line);
  if (n && line[n - 1] == '\n')
    line[--n] = '\0';
  const char *rest = strncmp(line, PREFIX, sizeof PREFIX - 1) ? line : line + sizeof PREFIX - 1;
  fprintf(out, "%s%sbroken:%s pid %lld: %s\n", PREFIX, pal.red, pal.reset, rows->procs[c->proc].pid,
          rest);
}

void cg_run_broken_lines(FILE *out, const cgr_report *rep, cg_palette pal) {
  const cgr_analysis *a = &rep->a;
  for (size_t b = 0; b < a->n_broken && b < CG_RUN_BROKEN_SHOWN; b++)
    one(out, rep, b, pal);
  if (a->n_broken > CG_RUN_BROKEN_SHOWN)
    fprintf(out, "%s%sbroken:%s and %zu more broken capture%s (capguard report lists them all)\n",
            PREFIX, pal.red, pal.reset, a->n_broken - CG_RUN_BROKEN_SHOWN,
            cg_plural(a->n_broken - CG_RUN_BROKEN_SHOWN));
}
