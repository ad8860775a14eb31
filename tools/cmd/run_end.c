/* run_end.h. The log is read, and the report built, here, in the command:
 * the summary (render/run_summary.c) only prints them. */
#include "run_end.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cli.h"
#include "findings.h"
#include "report.h"
#include "run_advice.h"
#include "run_summary.h"

size_t cg_read_run_logs(cgl_log *log, const cg_run_log_file *files, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (cgl_read_file(log, files[i].path, files[i].offset) != 0 && errno != ENOENT)
      return i + 1;
  return 0;
}

/* Why a log may hold less than happened: the shim says so in its summary, a
 * write was cut mid-line, the file reached this process's size limit (which
 * the command inherited), or its filesystem is full. "" when none. */
static const char *incomplete_why(const cg_run_logs *logs, bool flagged) {
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

/* The mode the processes ran in, when the caller did not choose one. */
static cg_run_mode mode_of(const cgl_log *log, cg_run_mode mode) {
  for (size_t p = 0; mode == CG_RUN_MODE_COUNT && p < log->n_procs; p++)
    mode = log->procs[p].mode;
  return mode == CG_RUN_MODE_COUNT ? CG_RUN_GUARD : mode;
}

/* The summary of log, the run's part of what was read. */
static void summarise(FILE *out, const cg_run_logs *logs, const cgl_log *log, cg_run_outcome *res) {
  cg_run_mode mode = mode_of(log, logs->mode);
  bool flagged = false;
  for (size_t p = 0; p < log->n_procs; p++)
    flagged |= log->procs[p].log_incomplete;
  const char *incomplete = incomplete_why(logs, flagged);
  char shown[4200];
  cg_run_summary_in in = {.incomplete = incomplete,
                          .shown = cg_printable(logs->shown_path, shown, sizeof shown),
                          .shown_path = logs->shown_path,
                          .temporary = logs->temporary,
                          .verdict_follows = logs->verdict_by != NULL,
                          .pid = logs->pid,
                          .signal = logs->signal};
  /* A log with nothing to analyse (empty, or no process used CUDA): the
   * findings table's sentence for it, and no report. */
  cgf_facts none = {.log = log, .mode = mode, .incomplete = incomplete, .log_shown = in.shown};
  cgf_list l;
  const cgf_finding *x = cgf_first(&none, CGF_NO_RECORDS, &l);
  if (x) {
    in.nothing = x->sentence;
    cg_run_summary_print(out, &in);
    cgf_list_free(&l);
    /* A temporary log is removed unless it may explain an incomplete run. */
    if (logs->temporary && (log->records || !*incomplete)) {
      remove_logs(logs);
      res->removed_log = true;
    }
    return;
  }
  cgf_list_free(&l);
  cgr_report r;
  cgr_report_build(&r, log, NULL, SIZE_MAX);
  cgr_run_advice adv;
  cgf_facts facts = {.a = &r.a,
                     .mode = mode,
                     .incomplete = incomplete,
                     .signal = logs->signal,
                     .signal_pid = logs->pid,
                     .prime_readonly = logs->prime_readonly,
                     .prime_unusable = logs->prime_unusable};
  cgr_run_advise(&facts, &adv);
  res->broken = r.a.n_broken;
  res->stale_reads = r.a.n_stale_reads;
  res->request_loads = r.requests.loads;
  in.report = &r;
  in.adv = &adv;
  cg_run_summary_print(out, &in);
  cgr_run_advice_free(&adv);
  cgr_report_free(&r);
}

void cg_run_summary(FILE *out, const cg_run_logs *logs, cg_run_outcome *res) {
  memset(res, 0, sizeof *res);
  cgl_log all;
  cgl_init(&all);
  size_t bad = cg_read_run_logs(&all, logs->files, logs->n_files);
  if (bad) {
    int err = errno;
    char name[4200];
    fprintf(out, "capguard: cannot read the log %s: %s\n",
            cg_printable(logs->files[bad - 1].path, name, sizeof name), strerror(err));
    cgl_free(&all);
    return;
  }
  cgl_group_runs(&all);
  size_t mine = this_run(&all, logs->run_id);
  cgl_log view;
  bool one = mine != SIZE_MAX && all.n_runs > 1;
  if (one)
    cgl_view(&all, mine, &view);
  summarise(out, logs, one ? &view : &all, res);
  if (one)
    cgl_free(&view);
  cgl_free(&all);
}
