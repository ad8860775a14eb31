#include "run_summary.h"

#include <errno.h>
#include <string.h>

#include "cli.h"
#include "report_analysis.h"

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
    fprintf(out,
            "capguard: the shim wrote nothing to %s%s: the command may not have loaded it (a "
            "static or setuid program, or LD_PRELOAD cleared); check with capguard doctor\n",
            log_path, !strcmp(mode, "off") ? " (mode off)" : "");
    cgl_free(&log);
    return;
  }
  cgr_analysis a;
  cgr_analyse(&log, &a);
  fprintf(out, "capguard: %zu process%s, %zu capture%s, %s%zu broken%s; events: module-load %zu,"
               " module-unload %zu",
          log.n_procs, log.n_procs == 1 ? "" : "es", a.captures,
          a.captures == 1 ? "" : "s", a.n_broken ? pal.red : "", a.n_broken,
          a.n_broken ? pal.reset : "", a.loads + a.served, a.unloads);
  fprintf(out, " (refused %zu, emulated %zu, allowed %zu, served %zu, rescued %zu, deferred %zu)",
          a.refused, a.emulated, a.allowed, a.served, a.rescued, a.deferred);
  fprintf(out, "; %zu kernel%s in %zu image%s recorded\n", a.recorded ? a.n_kernels : 0,
          a.recorded && a.n_kernels == 1 ? "" : "s", a.recorded, a.recorded == 1 ? "" : "s");
  if (log.malformed)
    fprintf(out, "capguard: %zu malformed log line%s skipped (first: %s)\n", log.malformed,
            log.malformed == 1 ? "" : "s", log.first_malformed);

  const char *next;
  char buf[256];
  bool guard = !strcmp(mode, "guard");
  if (a.recorded) {
    snprintf(buf, sizeof buf, "run again: %zu kernel%s will be loaded before capture", a.n_kernels,
             a.n_kernels == 1 ? "" : "s");
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
  fprintf(out, "capguard: %slog: %s%s (details: capguard report %s)\n", pal.dim, log_path,
          temporary ? " (temporary)" : "", log_path);
  if (pal.dim[0])
    fputs(pal.reset, out);
  cgr_free(&a);
  cgl_free(&log);
}
