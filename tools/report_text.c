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
    char why[256];
    cgr_why(e, why, sizeof why);
    fprintf(out, "    why: %s\n", why);
  }
}

/* One line a process: what it was, how it ran, and how its captures fared; the
 * story of the runs in a log (run 1 broke, run 2 was primed) at a glance. */
static void print_processes(FILE *out, const cgr_analysis *a, cg_palette pal) {
  const cgl_log *log = a->log;
  const size_t shown_max = 20;
  fprintf(out, "\n%sProcesses%s (as logged)\n", pal.bold, pal.reset);
  for (size_t p = 0; p < log->n_procs && p < shown_max; p++) {
    const cgl_process *pr = &log->procs[p];
    size_t seen = 0, broken = 0, served = 0;
    for (size_t c = 0; c < log->n_caps; c++)
      seen += log->caps[c].proc == p;
    for (size_t b = 0; b < a->n_broken; b++)
      broken += log->caps[a->broken[b].capture].proc == p;
    for (size_t i = 0; i < log->n_evs; i++)
      served += log->evs[i].proc == p && log->evs[i].verdict && !strcmp(log->evs[i].verdict, "served");
    size_t captures = pr->has_summary && (size_t)pr->captures > seen ? (size_t)pr->captures : seen;
    char who[256], cmd[96] = "", drv[64] = "";
    cgr_process_label(a, p, who, sizeof who);
    size_t used = 0;
    for (size_t i = 0; i < pr->argc && used < sizeof cmd - 1; i++) {
      const char *w = pr->argv[i], *slash = i == 0 ? strrchr(w, '/') : NULL;
      int n = snprintf(cmd + used, sizeof cmd - used, "%s%s", i ? " " : "", slash ? slash + 1 : w);
      used = n < 0 ? used : used + (size_t)n;
    }
    if (used >= sizeof cmd - 1)
      memcpy(cmd + sizeof cmd - 4, "...", 4);
    if (pr->emulate_driver > 0)
      snprintf(drv, sizeof drv, ", emulating CUDA %lld.%lld", pr->emulate_driver / 1000,
               (pr->emulate_driver % 1000) / 10);
    else if (pr->driver_version > 0)
      snprintf(drv, sizeof drv, ", CUDA %lld.%lld", pr->driver_version / 1000,
               (pr->driver_version % 1000) / 10);
    fprintf(out, "  %s %s (%s mode%s): %zu capture%s, %s%zu broken%s", who, cmd[0] ? cmd : "?",
            or(pr->mode, "?"), drv, captures, captures == 1 ? "" : "s",
            broken ? pal.red : pal.green, broken, pal.reset);
    if (served)
      fprintf(out, ", %zu load%s served from the priming file", served, served == 1 ? "" : "s");
    fputc('\n', out);
  }
  if (log->n_procs > shown_max)
    fprintf(out, "  and %zu more\n", log->n_procs - shown_max);
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
  fprintf(out, "forbidden calls during capture: %zu (module-load %zu, module-unload %zu)", events,
          a->loads, a->unloads);
  /* Only the verdicts that happened: zeros are noise to someone reading this the first time. */
  const struct { const char *name; size_t n; } verdicts[] = {
      {"refused", a->refused}, {"emulated", a->emulated}, {"failed", a->failed},
      {"allowed", a->allowed}, {"rescued", a->rescued},   {"deferred", a->deferred},
      {"served", a->served}};
  bool any = false;
  for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
    if (verdicts[i].n) {
      fprintf(out, "%s%s %zu", any ? ", " : "; verdicts: ", verdicts[i].name, verdicts[i].n);
      any = true;
    }
  fputc('\n', out);
  if (log->n_procs)
    print_processes(out, a, pal);
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
