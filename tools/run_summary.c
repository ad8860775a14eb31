#include "run_summary.h"

#include <errno.h>
#include <string.h>

#include "cli.h"
#include "report_analysis.h"

/* One line that says, in words, why the first broken capture broke. */
static void why_line(FILE *out, const cgr_analysis *a, cg_palette pal) {
  if (!a->n_broken)
    return;
  const cgl_log *log = a->log;
  char more[64] = "";
  if (a->n_broken > 1)
    snprintf(more, sizeof more, "%zu captures broke; the first ", a->n_broken);
  long f = a->broken[0].first_event;
  if (f < 0) {
    fprintf(out, "capguard: %swhy:%s %s%s without a module call capguard tracks (a synchronize, an "
                 "allocation or a host copy during capture?)\n",
            pal.bold, pal.reset, more, a->n_broken > 1 ? "broke" : "the capture broke");
    return;
  }
  const cgl_event *e = &log->evs[f];
  char why[256], kernels[160];
  cgr_why(e, why, sizeof why);
  cgr_kernel_list(e, 3, kernels, sizeof kernels);
  fprintf(out, "capguard: %swhy:%s %s%s in pid %lld when it called %s%s%s%s: %s\n", pal.bold,
          pal.reset, more, a->n_broken > 1 ? "broke" : "a capture broke",
          log->procs[e->proc].pid, e->call ? e->call : "?", kernels[0] ? " (kernels " : "",
          kernels, kernels[0] ? ")" : "", why);
}

void cg_run_summary(FILE *out, const char *log_path, long long offset, bool temporary,
                    const char *mode) {
  cg_palette pal = cg_palette_for(out);
  cgl_log log;
  cgl_init(&log);
  /* A log that was never created is a log with nothing in it. */
  if (cgl_read_file(&log, log_path, offset) != 0 && errno != ENOENT) {
    fprintf(out, "capguard: cannot read the log %s: %s\n", log_path, strerror(errno));
    cgl_free(&log);
    return;
  }
  /* The mode the processes ran in, when the caller did not choose one. */
  for (size_t p = 0; !mode && p < log.n_procs; p++)
    mode = log.procs[p].mode;
  if (!mode)
    mode = "guard";
  if (log.lines == 0) {
    if (!strcmp(mode, "off"))
      fprintf(out, "capguard: mode off: the shim stayed out of the way and logged nothing to %s, "
                   "as asked; drop --mode off to check captures\n", log_path);
    else
      fprintf(out,
              "capguard: the shim wrote nothing to %s: the command may not have loaded it (a "
              "static or setuid program, or LD_PRELOAD cleared); check with capguard doctor\n",
              log_path);
    cgl_free(&log);
    return;
  }
  cgr_analysis a;
  cgr_analyse(&log, &a);
  fprintf(out, "capguard: %zu process%s, %zu capture%s, %s%zu broken%s; during capture: "
               "module-load %zu, module-unload %zu",
          log.n_procs, log.n_procs == 1 ? "" : "es", a.captures,
          a.captures == 1 ? "" : "s", a.n_broken ? pal.red : "", a.n_broken,
          a.n_broken ? pal.reset : "", a.loads + a.served, a.unloads);
  /* Verdicts that happened, in the order a reader asks about them. */
  const struct { const char *name; size_t n; } verdicts[] = {
      {"refused", a.refused}, {"emulated", a.emulated}, {"failed", a.failed},
      {"allowed", a.allowed}, {"served", a.served},     {"rescued", a.rescued},
      {"deferred", a.deferred}};
  bool any = false;
  for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
    if (verdicts[i].n) {
      fprintf(out, "%s%s %zu", any ? ", " : " (", verdicts[i].name, verdicts[i].n);
      any = true;
    }
  fputs(any ? ")\n" : "\n", out);
  if (log.malformed)
    fprintf(out, "capguard: %zu malformed log line%s skipped (first: %s)\n", log.malformed,
            log.malformed == 1 ? "" : "s", log.first_malformed);
  why_line(out, &a, pal);

  const char *next;
  char buf[512];
  bool guard = !strcmp(mode, "guard");
  if (a.recorded) {
    /* The kernels of the loads this run recorded (every offending load is recorded in guard mode). */
    char names[160] = "";
    size_t used = 0;
    for (size_t k = 0; k < a.n_kernels && k < 4; k++) {
      int n = snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "", a.kernels[k].name);
      if (n < 0 || (size_t)n >= sizeof names - used)
        break;
      used += (size_t)n;
    }
    snprintf(buf, sizeof buf,
             "run again: %zu kernel%s will be loaded before capture (%s%s; "
             "recorded in the priming file)",
             a.n_kernels, a.n_kernels == 1 ? "" : "s", names, a.n_kernels > 4 ? ", ..." : "");
    next = buf;
  } else if ((a.n_broken || a.loads || a.unloads) && !guard) {
    next = "run again in guard mode (capguard run --mode guard -- CMD) to record and prime them";
  } else if (a.n_broken || a.loads) {
    next = "nothing was recorded for the next run: see capguard report below, and check the "
           "priming file with capguard doctor";
  } else if (a.served) {
    next = "priming worked: every load during capture was served from the priming file";
  } else {
    next = "no forbidden calls during capture: nothing to do";
  }
  fprintf(out, "capguard: %snext:%s %s\n", pal.bold, pal.reset, next);
  if (a.loads_refused && a.n_broken && guard)
    fprintf(out, "capguard: %sfaster:%s %s\n", pal.bold, pal.reset, cgr_faster_advice);
  if (a.skipped_arch)
    fprintf(out, "capguard: %snote:%s %zu priming record%s not used: built for sm_%lld, this device is "
                 "sm_%lld; learn the priming file on this GPU architecture\n",
            pal.bold, pal.reset, a.skipped_arch, a.skipped_arch == 1 ? " was" : "s were", a.skipped_sm,
            a.device_sm);
  fprintf(out, "capguard: %slog: %s%s (details: capguard report %s)\n", pal.dim, log_path,
          temporary ? " (temporary)" : "", log_path);
  if (pal.dim[0])
    fputs(pal.reset, out);
  cgr_free(&a);
  cgl_free(&log);
}
