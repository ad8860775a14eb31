#include "run_summary.h"

#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cli.h"
#include "report_analysis.h"
#include "report_render.h"
#include "rerun_command.h"
#include "run_broken.h"

/* One line that says, in words, why the first broken capture broke, when the
 * call that broke it is logged (its kernels, the driver's rule); the
 * "broken:" lines above name the offender of each, or say none was seen. */
static void why_line(FILE *out, const cgr_analysis *a, cg_palette pal) {
  if (!a->n_broken)
    return;
  const cgl_log *log = a->log;
  char more[64] = "";
  if (a->n_broken > 1)
    snprintf(more, sizeof more, "%zu captures broke; the first ", a->n_broken);
  long f = a->broken[0].first_event;
  const cgl_capture *c = &log->caps[a->broken[0].capture];
  if (f < 0 || (c->by == CGL_BY_CALL && log->evs[f].call != c->offender.call))
    return;
  const cgl_event *e = &log->evs[f];
  char why[256], kernels[160];
  cgr_why(e, why, sizeof why);
  cgr_kernel_list(e, 3, kernels, sizeof kernels);
  fprintf(out, "capguard: %swhy:%s %s%s in pid %lld when it called %s%s%s%s: %s\n", pal.bold,
          pal.reset, more, a->n_broken > 1 ? "broke" : "a capture broke",
          log->procs[e->proc].pid, e->call ? e->call : "?", kernels[0] ? " (kernels " : "",
          kernels, kernels[0] ? ")" : "", why);
}

/* Why a log may hold less than happened: the shim says so in its summary, a
 * write was cut mid-line, the file reached this process's size limit (which
 * the command inherited), or its filesystem is full. "" when none. */
static const char *incomplete_why(const cg_run_logs *logs, const cgl_log *log, bool flagged) {
  if (flagged)
    return "a process could not write all its lines";
  for (size_t i = 0; i < logs->n_files; i++) {
    const char *path = logs->files[i].path;
    struct stat st;
    if (stat(path, &st) != 0)
      continue;
    /* The shim takes back a line it could not write whole, so a log that hit
     * the limit (or filled the disk) ends up to one line short of it: within
     * LINE_ROOM, the longest line the shim writes in practice. */
    const unsigned long long LINE_ROOM = 64 << 10;
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (unsigned long long)st.st_size + LINE_ROOM >= (unsigned long long)rl.rlim_cur)
      return "it reached the file size limit (ulimit -f)";
    struct statvfs vfs;
    if (statvfs(path, &vfs) == 0 && (unsigned long long)vfs.f_bavail * vfs.f_bsize < LINE_ROOM)
      return "its filesystem is full";
    if (st.st_size > logs->files[i].offset) {
      FILE *f = fopen(path, "r");
      int last = EOF;
      if (f && fseeko(f, -1, SEEK_END) == 0)
        last = fgetc(f);
      if (f)
        fclose(f);
      if (last != EOF && last != '\n')
        return "its last line was cut short (a write failed)";
    }
  }
  (void)log;
  return "";
}

static void remove_logs(const cg_run_logs *logs) {
  for (size_t i = 0; i < logs->n_files; i++)
    unlink(logs->files[i].path);
}

/* The processes of this run: those capguard run named (its run id), else all
 * that were appended (a log shared with other runs at the same time). */
static size_t this_run(const cgl_log *log, const char *run_id) {
  for (size_t r = 0; run_id && r < log->n_runs; r++) {
    const cgl_process *top = &log->procs[log->runs[r].first_proc];
    if (top->run && !strcmp(top->run, run_id))
      return r;
  }
  return SIZE_MAX;
}

static void next_line(FILE *out, const cgr_analysis *a, cg_run_mode mode, const char *incomplete,
                      cg_palette pal) {
  const cgl_log *log = a->log;
  size_t run = log->n_runs ? log->n_runs - 1 : 0;
  char cmd[1024], buf[1600];
  const char *prime = cgr_run_prime_path(log, run);
  bool guard = mode == CG_RUN_GUARD;
  const char *next = buf;
  if (a->recorded && guard) {
    /* The kernels of the loads this run recorded (every offending load is recorded in guard mode). */
    char names[160] = "";
    size_t used = 0, shown = 0;
    for (size_t k = 0; k < a->n_kernels && shown < 4; k++) {
      if (a->kernels[k].loads == a->kernels[k].served)
        continue;
      int n = snprintf(names + used, sizeof names - used, "%s%s", shown ? ", " : "",
                       a->kernels[k].name);
      if (n < 0 || (size_t)n >= sizeof names - used)
        break;
      used += (size_t)n;
      shown++;
    }
    /* Images, not recordings: workers that load the same image record it once. */
    size_t images = 0;
    const char **seen = calloc(log->n_evs + 1, sizeof *seen);
    for (size_t i = 0; seen && i < log->n_evs; i++) {
      const cgl_event *e = &log->evs[i];
      bool dup = !e->image_hash || !cgr_offending(e) || e->kind != CG_EV_MODULE_LOAD;
      for (size_t k = 0; k < images && !dup; k++)
        dup = seen[k] == e->image_hash; /* interned: equal strings are equal pointers */
      if (!dup)
        seen[images++] = e->image_hash;
    }
    free(seen);
    if (!images) /* loads logged without an image: the processes' own count */
      images = a->recorded;
    bool whole = cgr_rerun_command(log, run, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
    snprintf(buf, sizeof buf,
             "run it again; the %zu image%s loaded during capture, recorded in %s (kernels %s%s), "
             "will be loaded before capture: %s%s",
             images, images == 1 ? "" : "s", *prime ? prime : "the priming file",
             names[0] ? names : "?", a->n_kernels > shown ? ", ..." : "", cmd,
             whole ? "" : " (the logged command line was cut: complete it)");
  } else if (a->n_broken && !a->offending_loads && !a->events[CG_EV_MODULE_UNLOAD]) {
    /* nothing to record or prime: the fix is in the program */
    next = "no module load broke a capture, so priming cannot help: make the call each broken: "
           "line names before its capture begins or after it ends; for a capture broken by a call "
           "capguard does not watch, look at the code between where it began and where it ended";
  } else if ((a->n_broken || a->offending_loads || a->events[CG_EV_MODULE_UNLOAD]) && !guard) {
    cgr_rerun_command(log, run, CG_RUN_MODE_COUNT, cmd, sizeof cmd);
    snprintf(buf, sizeof buf, "run it in guard mode (the default) to record the images and "
                              "prime them on the run after: %s", cmd);
  } else if (a->n_broken || a->offending_loads) {
    next = "nothing was recorded for the next run: see capguard report below, and check the "
           "priming file with capguard doctor";
  } else if (*incomplete) {
    next = "the log is incomplete, so capguard cannot say that nothing broke: free space (or "
           "pass --log elsewhere) and run it again";
  } else if (a->verdicts[CG_VERDICT_SERVED]) {
    snprintf(buf, sizeof buf, "priming worked: every load during capture was served from %s",
             *prime ? prime : "the priming file");
  } else if (a->calls) {
    /* calls were made and none broke a capture (guard mode answered them) */
    next = "no capture broke: the calls during capture (counted above) were handled; nothing to do "
           "(capguard report gives each with where it was made)";
  } else {
    next = "no forbidden calls during capture: nothing to do";
  }
  fprintf(out, "capguard: %snext:%s %s\n", pal.bold, pal.reset, next);
}

/* Processes that used the driver. */
static size_t cuda_processes(const cgl_log *log) {
  size_t n = 0;
  for (size_t p = 0; p < log->n_procs; p++)
    n += log->procs[p].cuda;
  return n;
}

void cg_run_summary(FILE *out, const cg_run_logs *logs, cg_run_outcome *res) {
  cg_palette pal = cg_palette_for(out);
  memset(res, 0, sizeof *res);
  cgl_log all;
  cgl_init(&all);
  for (size_t i = 0; i < logs->n_files; i++) {
    /* A log that was never created is a log with nothing in it. */
    if (cgl_read_file(&all, logs->files[i].path, logs->files[i].offset) != 0 && errno != ENOENT) {
      char name[4200];
      fprintf(out, "capguard: cannot read the log %s: %s\n",
              cg_printable(logs->files[i].path, name, sizeof name), strerror(errno));
      cgl_free(&all);
      return;
    }
  }
  cgl_group_runs(&all);
  size_t mine = this_run(&all, logs->run_id);
  cgl_log view;
  if (mine != SIZE_MAX && all.n_runs > 1)
    cgl_view(&all, mine, &view);
  cgl_log *log = mine != SIZE_MAX && all.n_runs > 1 ? &view : &all;

  /* The mode the processes ran in, when the caller did not choose one. */
  cg_run_mode mode = logs->mode;
  for (size_t p = 0; mode == CG_RUN_MODE_COUNT && p < log->n_procs; p++)
    mode = log->procs[p].mode;
  if (mode == CG_RUN_MODE_COUNT)
    mode = CG_RUN_GUARD;
  bool flagged = false;
  for (size_t p = 0; p < log->n_procs; p++)
    flagged |= log->procs[p].log_incomplete;
  const char *incomplete = incomplete_why(logs, log, flagged);
  char shown_buf[4200];
  const char *shown = cg_printable(logs->shown_path, shown_buf, sizeof shown_buf);

  if (log->records == 0) {
    if (*incomplete)
      fprintf(out, "capguard: the log %s holds nothing: %s, so capguard cannot say what happened; "
                   "free space or pass --log elsewhere, and run it again\n", shown, incomplete);
    else if (mode == CG_RUN_OFF)
      fprintf(out, "capguard: mode off: the shim stayed out of the way and logged nothing, as "
                   "asked; drop --mode off to check captures\n");
    else
      fprintf(out,
              "capguard: the shim wrote nothing to %s: the command did not load it (a static or "
              "setuid program, or LD_PRELOAD cleared) or was killed before it exited; check with "
              "capguard doctor\n", shown);
    if (logs->temporary && !*incomplete) {
      remove_logs(logs);
      res->removed_log = true;
    }
    goto done;
  }
  if (!cuda_processes(log) && log->n_evs == 0 && log->n_caps == 0) {
    char cmd[96];
    cgr_process_command(&log->procs[log->n_runs ? log->runs[0].first_proc : 0], cmd, sizeof cmd);
    fprintf(out, "capguard: no CUDA used: %zu process%s ran under the shim (%s), none loaded the "
                 "CUDA driver; nothing to check\n",
            log->n_procs, log->n_procs == 1 ? "" : "es", cmd[0] ? cmd : "?");
    if (logs->temporary) {
      remove_logs(logs);
      res->removed_log = true;
    }
    goto done;
  }

  cgr_analysis a;
  cgr_analyse(log, &a);
  res->broken = a.n_broken;
  size_t cuda = cuda_processes(log);
  char open[64] = "";
  if (a.open_at_exit)
    snprintf(open, sizeof open, ", %zu open at exit", a.open_at_exit);
  fprintf(out, "capguard: %zu process%s used CUDA, %zu capture%s, %s%zu broken%s%s; %zu call%s "
               "during capture (",
          cuda, cuda == 1 ? "" : "es", a.captures, a.captures == 1 ? "" : "s",
          a.n_broken ? pal.red : "", a.n_broken, a.n_broken ? pal.reset : "", open, a.calls,
          a.calls == 1 ? "" : "s");
  cgr_print_event_counts(out, &a);
  fputc(')', out);
  cgr_print_verdict_counts(out, &a, ": ");
  fputc('\n', out);
  if (log->malformed)
    fprintf(out, "capguard: %zu malformed log line%s skipped (first: %s)\n", log->malformed,
            log->malformed == 1 ? "" : "s", log->first_malformed);
  if (*incomplete)
    fprintf(out, "capguard: %sthe log is incomplete:%s %s; the counts above are lower bounds\n",
            pal.red, pal.reset, incomplete);
  cg_run_broken_lines(out, &a, pal);
  if (a.verdicts[CG_VERDICT_ESCAPED])
    fprintf(out, "capguard: %s%zu call%s escaped a capture%s: the driver said ok, but the graph will not do "
                 "what the program meant (see \"Escaped captures\" in capguard report)\n",
            pal.bold, a.verdicts[CG_VERDICT_ESCAPED], a.verdicts[CG_VERDICT_ESCAPED] == 1 ? "" : "s", pal.reset);
  if (a.open_unbroken)
    fprintf(out, "capguard: %zu capture%s still open when %s process exited: no graph was made "
                 "(the process exited, or was killed, before ending %s); capguard report shows where %s began\n",
            a.open_unbroken, a.open_unbroken == 1 ? " was" : "s were", a.open_unbroken == 1 ? "its" : "their",
            a.open_unbroken == 1 ? "it" : "them", a.open_unbroken == 1 ? "it" : "they");
  why_line(out, &a, pal);
  next_line(out, &a, mode, incomplete, pal);
  if (a.loads_refused && a.n_broken && mode == CG_RUN_GUARD) {
    char faster[4096];
    cgr_faster_advice(log, log->n_runs ? log->n_runs - 1 : 0, faster, sizeof faster);
    fprintf(out, "capguard: %sfaster:%s %s\n", pal.bold, pal.reset, faster);
  }
  if (a.skipped_arch)
    fprintf(out, "capguard: %snote:%s %zu priming record%s not used: built for sm_%lld, this device is "
                 "sm_%lld; learn the priming file on this GPU architecture\n",
            pal.bold, pal.reset, a.skipped_arch, a.skipped_arch == 1 ? " was" : "s were", a.skipped_sm,
            a.device_sm);
  fprintf(out, "capguard: %slog: %s%s (details: capguard report ", pal.dim, shown,
          logs->temporary ? " (temporary)" : "");
  for (size_t i = 0; i < logs->n_files && i < 4; i++) {
    size_t used = 0;
    char word[4200] = "";
    cgr_shell_word(logs->files[i].path, word, sizeof word, &used);
    fprintf(out, "%s%s", i ? " " : "", word);
  }
  fprintf(out, "%s)\n", logs->n_files > 4 ? " ..." : "");
  if (pal.dim[0])
    fputs(pal.reset, out);
  cgr_free(&a);
done:
  if (log == &view)
    cgl_free(&view);
  cgl_free(&all);
}
