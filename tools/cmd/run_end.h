/* What capguard run does after its command ends: reads the part of the
 * log(s) this run appended, builds the report of its run (meaning/report.h)
 * and the findings table's advice for a run, has the summary printed
 * (render/run_summary.h), and removes a temporary log that holds nothing. */
#ifndef CAPGUARD_RUN_END_H
#define CAPGUARD_RUN_END_H

#include <stdbool.h>
#include <stdio.h>

#include "capguard/log_schema.h"
#include "log_reader.h"

typedef struct {
  const char *path;
  long long offset; /* what was there before the run */
} cg_run_log_file;

typedef struct {
  const cg_run_log_file *files; /* one, or one per process with %p in the log path */
  size_t n_files;
  const char *shown_path; /* the log as the user named it (may hold %p) */
  bool temporary;         /* capguard run made it: removed when nothing was logged */
  cg_run_mode mode;       /* the mode asked for (CG_RUN_MODE_COUNT: none; the processes' own) */
  const char *run_id;     /* CAPGUARD_RUN given to this run's processes */
  const char *verdict_by; /* prime learn / check, whose verdict follows and says what to
                             do: the summary then gives facts only (NULL: none) */
  long long pid;          /* the command's pid */
  int signal;             /* the signal that killed it, from its wait status (0: it exited) */
  bool prime_readonly;    /* CAPGUARD_PRIME_READONLY=1: the run served, never recorded */
  bool prime_unusable;    /* run said before the start that the priming file cannot be
                             used: no advice repeats its path in a command */
} cg_run_logs;

typedef struct {
  size_t broken;        /* captures that broke in this run */
  size_t stale_reads;   /* stale reads the stale-pointer check named (a finding, as a break is) */
  size_t request_loads; /* loads on the request path (request_path.h) */
  bool removed_log;     /* the temporary log held nothing and was removed */
} cg_run_outcome;

/* The summary on out, and what it found in res. */
void cg_run_summary(FILE *out, const cg_run_logs *logs, cg_run_outcome *res);

/* Reads each file from its offset into log (cgl_init'd); a file never
 * created is a file with nothing in it. Returns 0, or the index + 1 of the
 * file that could not be read (errno set). Shared by run and prime learn
 * and check, which read the log of the run they started. */
size_t cg_read_run_logs(cgl_log *log, const cg_run_log_file *files, size_t n);

#endif
