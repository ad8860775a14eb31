#include "run_summary.h"

#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "capture_totals.h"
#include "cli.h"
#include "ended_early.h"
#include "findings.h"
#include "analysis.h"
#include "report_ranks.h"
#include "report_render.h"
#include "rerun_command.h"
#include "run_advice.h"
#include "run_broken.h"
#include "plural.h"
#include "request_path.h"

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

/* What to do next, and what else the findings table says to a run. */
static void findings_lines(FILE *out, const cgr_run_advice *adv, cg_palette pal) {
  const struct {
    const cgf_list *l;
    const char *label;
  } parts[] = {{&adv->next, "next:"}, {&adv->faster, "faster:"}, {&adv->note, "note:"}};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    for (size_t k = 0; k < parts[i].l->n; k++) {
      char first[64];
      snprintf(first, sizeof first, "capguard: %s%s%s ", pal.bold, parts[i].label, pal.reset);
      cgf_print(out, &parts[i].l->v[k], first, "  ");
    }
  }
}

/* Processes that used the driver. */
static size_t cuda_processes(const cgl_log *log) {
  size_t n = 0;
  for (size_t p = 0; p < log->n_procs; p++)
    n += log->procs[p].cuda;
  return n;
}

/* A log with nothing to analyse (empty, or no process used CUDA): the
 * findings table's sentence for it, and true; false when there is
 * something to analyse. */
static bool nothing_to_analyse(FILE *out, const cgl_log *log, cg_run_mode mode, const char *incomplete,
                               const char *shown) {
  cgf_facts facts = {.log = log, .mode = mode, .incomplete = incomplete, .log_shown = shown};
  cgf_list l;
  const cgf_finding *x = cgf_first(&facts, CGF_NO_RECORDS, &l);
  if (x)
    fprintf(out, "capguard: %s\n", x->sentence);
  cgf_list_free(&l);
  return x != NULL;
}

/* What the findings table says on a line of its own after the broken
 * captures (work that escaped a capture, captures open at exit). */
static void said_lines(FILE *out, const cgf_list *said, cg_palette pal) {
  for (size_t i = 0; i < said->n; i++) {
    const cgf_finding *x = &said->v[i];
    const char *on = x->emphasis ? pal.bold : "", *off = x->emphasis ? pal.reset : "";
    fprintf(out, "capguard: %s%.*s%s%s\n", on, (int)x->emphasis, x->sentence, off, x->sentence + x->emphasis);
  }
}

/* Where the start-up's time went: "capture: 3,412 graphs in 41.2 s
 * (slowest 0.8 s at SITE); first replay 52.0 s after the first begin". */
static void capture_time_line(FILE *out, const cgl_log *log, cg_palette pal) {
  char line[1100];
  cgr_capture_time_sentence(log, line, sizeof line);
  if (line[0])
    fprintf(out, "capguard: %scapture:%s %s\n", pal.bold, pal.reset, line);
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
  /* First, whatever the log holds: the log of a killed command may hold nothing. */
  if (logs->signal) {
    char words[48];
    cgr_signal_words(logs->signal, words, sizeof words);
    fprintf(out, "capguard: %sthe command (pid %lld) was killed by %s%s\n", pal.red, logs->pid, words,
            pal.reset);
  }

  if (nothing_to_analyse(out, log, mode, incomplete, shown)) {
    /* A temporary log is removed unless it may explain an incomplete run. */
    if (logs->temporary && (log->records || !*incomplete)) {
      remove_logs(logs);
      res->removed_log = true;
    }
    goto done;
  }

  cgr_analysis a;
  cgr_analyse(log, &a);
  cgr_run_advice adv;
  cgf_facts facts = {.a = &a, .mode = mode, .incomplete = incomplete, .signal = logs->signal,
                     .signal_pid = logs->pid, .prime_readonly = logs->prime_readonly,
                     .prime_unusable = logs->prime_unusable};
  cgr_run_advise(&facts, &adv);
  res->broken = a.n_broken;
  res->stale_reads = a.n_stale_reads;
  cgr_request_totals rq;
  cgr_request_totals_of(log, &rq);
  res->request_loads = rq.loads;
  size_t cuda = cuda_processes(log);
  char open[64] = "";
  if (a.open_at_exit)
    snprintf(open, sizeof open, ", %zu open at exit", a.open_at_exit);
  char stale[64] = "";
  if (a.n_stale_reads)
    snprintf(stale, sizeof stale, ", %s%zu stale read%s%s", pal.red, a.n_stale_reads, cg_plural(a.n_stale_reads),
             pal.reset);
  /* a process that ended without its exit record may have had a capture open: "logged" */
  fprintf(out, "capguard: %zu process%s used CUDA, %zu capture%s%s, %s%zu broken%s%s%s; %zu call%s "
               "during capture (",
          cuda, cg_plural_es(cuda), a.captures, cg_plural(a.captures), a.ended_early ? " logged" : "",
          a.n_broken ? pal.red : "", a.n_broken, a.n_broken ? pal.reset : "", stale, open, a.calls,
          cg_plural(a.calls));
  cgr_print_event_counts(out, &a);
  fputc(')', out);
  cgr_print_verdict_counts(out, &a, ": ");
  fputc('\n', out);
  capture_time_line(out, log, pal);
  if (log->malformed)
    fprintf(out, "capguard: %zu malformed log line%s skipped (first: %s)\n", log->malformed,
            cg_plural(log->malformed), log->first_malformed);
  if (*incomplete)
    fprintf(out, "capguard: %sthe log is incomplete:%s %s; the counts above are lower bounds\n",
            pal.red, pal.reset, incomplete);
  cg_run_broken_lines(out, &a, pal);
  cgr_print_ranks_text(out, log, pal, "capguard: ");
  said_lines(out, &adv.said, pal);
  why_line(out, &a, pal);
  if (!logs->verdict_by)
    findings_lines(out, &adv, pal);
  /* The command that reads it, alone on its line: with %p, the pattern itself
   * (capguard report reads every file it names). A temporary log is kept for
   * that command: it is removed only when it holds nothing. */
  if (logs->verdict_by) /* prime learn and check say where the log is, and keep it or not */
    goto analysed;
  char word[4200] = "";
  size_t used = 0;
  cgr_shell_word(logs->shown_path, word, sizeof word, &used);
  fprintf(out, "capguard: %slog: %s%s; details:%s\n", pal.dim, shown,
          logs->temporary ? " (a temporary file, kept for the command below: delete it when done)"
                          : "",
          pal.dim[0] ? pal.reset : "");
  fprintf(out, "  %s report %s\n", cgr_self_word(), word);
analysed:
  cgr_run_advice_free(&adv);
  cgr_free(&a);
done:
  if (log == &view)
    cgl_free(&view);
  cgl_free(&all);
}
