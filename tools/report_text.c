#include <string.h>

#include "report_render.h"

void cgr_process_label(const cgr_analysis *a, size_t proc, char *buf, size_t cap) {
  const cgl_process *p = &a->log->procs[proc];
  if (a->log->n_files > 1) {
    const char *f = a->log->files[p->file], *slash = strrchr(f, '/');
    snprintf(buf, cap, "pid %lld (%s)", p->pid, slash ? slash + 1 : f);
  } else {
    snprintf(buf, cap, "pid %lld", p->pid);
  }
}

static const char *or(const char *s, const char *dflt) { return s && *s ? s : dflt; }

static void print_broken(FILE *out, const cgr_analysis *a, cg_palette pal) {
  const cgl_log *log = a->log;
  fprintf(out, "\n%sBroken captures%s\n", pal.bold, pal.reset);
  for (size_t b = 0; b < a->n_broken; b++) {
    const cgl_capture *c = &log->caps[a->broken[b].capture];
    char who[256];
    cgr_process_label(a, c->proc, who, sizeof who);
    fprintf(out, "  %s%s capture %lld%s (stream %s, %s, %s; began %s)\n", pal.red, who, c->id,
            pal.reset, or(c->stream, "?"), or(c->mode, "?"), or(c->status, "?"),
            or(c->began, "where unknown"));
    long f = a->broken[b].first_event;
    if (f < 0) {
      fprintf(out, "    no forbidden call logged: something capguard does not track broke it\n");
      continue;
    }
    const cgl_event *e = &log->evs[f];
    char site[512];
    cgl_event_site(e, site, sizeof site);
    fprintf(out, "    first broken by %s%s%s (%s, %s, CUresult %lld) at %s\n", pal.bold,
            or(e->call, "?"), pal.reset, or(e->event, "?"), or(e->verdict, "?"), e->result, site);
    if (json_array_size(e->kernels)) {
      fputs("    kernels:", out);
      size_t i;
      json_t *k;
      json_array_foreach(e->kernels, i, k) {
        if (json_is_string(k))
          fprintf(out, "%s %s", i ? "," : "", json_string_value(k));
      }
      fputs(e->kernels_truncated ? ", ...\n" : "\n", out);
    }
  }
}

static void print_kernels(FILE *out, const cgr_analysis *a, cg_palette pal) {
  fprintf(out, "\n%sKernels loaded during capture%s (deduplicated)\n", pal.bold, pal.reset);
  fprintf(out, "  %5s  %s\n", "count", "kernel");
  for (size_t k = 0; k < a->n_kernels; k++)
    fprintf(out, "  %5zu  %s\n", a->kernels[k].count, a->kernels[k].name);
}

static void print_sites(FILE *out, const cgr_analysis *a, cg_palette pal) {
  fprintf(out, "\n%sCall sites%s (Python frame first, else native)\n", pal.bold, pal.reset);
  fprintf(out, "  %5s  %s\n", "count", "site");
  for (size_t s = 0; s < a->n_sites; s++) {
    const cgr_site *st = &a->sites[s];
    fprintf(out, "  %5zu  %s  %s[", st->count, st->site, pal.dim);
    for (size_t i = 0; i < st->n_calls; i++)
      fprintf(out, "%s%s", i ? ", " : "", st->calls[i]);
    if (st->n_kernels) {
      fputs("; kernels:", out);
      for (size_t i = 0; i < st->n_kernels && i < 8; i++)
        fprintf(out, "%s %s", i ? "," : "", st->kernels[i]);
      if (st->n_kernels > 8)
        fprintf(out, " and %zu more", st->n_kernels - 8);
    }
    fprintf(out, "]%s\n", pal.reset);
  }
}

void cgr_print_text(FILE *out, const cgr_analysis *a, cg_palette pal) {
  const cgl_log *log = a->log;
  fprintf(out, "capguard report: %zu log%s, %zu process%s, %zu capture%s, %s%zu broken%s\n",
          log->n_files, log->n_files == 1 ? "" : "s", log->n_procs, log->n_procs == 1 ? "" : "es",
          a->captures, a->captures == 1 ? "" : "s", a->n_broken ? pal.red : pal.green, a->n_broken,
          pal.reset);
  size_t events = a->loads + a->unloads + a->other_events;
  fprintf(out,
          "forbidden calls during capture: %zu (module-load %zu, module-unload %zu); verdicts: "
          "refused %zu, emulated %zu, allowed %zu, rescued %zu, deferred %zu, failed %zu, "
          "served %zu\n",
          events, a->loads, a->unloads, a->refused, a->emulated, a->allowed, a->rescued,
          a->deferred, a->failed, a->served);
  if (a->n_broken)
    print_broken(out, a, pal);
  if (a->n_kernels)
    print_kernels(out, a, pal);
  if (a->n_sites)
    print_sites(out, a, pal);
  fprintf(out, "\n%sWhat to do%s\n", pal.bold, pal.reset);
  for (size_t i = 0; i < a->n_advice; i++)
    fprintf(out, "  - %s\n", a->advice[i]);
}
