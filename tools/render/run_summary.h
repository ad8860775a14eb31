/* The few lines capguard run prints after its command ends: captures, calls
 * during capture by verdict, what to do next as a command to paste. Read from
 * the part of the log(s) this run appended. */
#ifndef CAPGUARD_RUN_SUMMARY_H
#define CAPGUARD_RUN_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>

#include "capguard/log_schema.h"

typedef struct {
  const char *path;
  long long offset; /* what was there before the run */
} cg_run_log_file;

typedef struct {
  const cg_run_log_file *files; /* one, or one per process with %p in the log path */
  size_t n_files;
  const char *shown_path;       /* the log as the user named it (may hold %p) */
  bool temporary;               /* capguard run made it: removed when nothing was logged */
  cg_run_mode mode;             /* the mode asked for (CG_RUN_MODE_COUNT: none; the processes' own) */
  const char *run_id;           /* CAPGUARD_RUN given to this run's processes */
  const char *verdict_by;       /* prime learn / check, whose verdict follows and says what to
                                   do: the summary then gives facts only (NULL: none) */
  long long pid;                /* the command's pid */
  int signal;                   /* the signal that killed it, from its wait status (0: it exited) */
  bool prime_readonly;          /* CAPGUARD_PRIME_READONLY=1: the run served, never recorded */
  bool prime_unusable;          /* run said before the start that the priming file cannot be
                                   used: no advice repeats its path in a command */
} cg_run_logs;

typedef struct {
  size_t broken;      /* captures that broke in this run */
  size_t stale_reads; /* stale reads the stale-pointer check named (a finding, as a break is) */
  size_t request_loads; /* loads on the request path (request_path.h) */
  bool removed_log;   /* the temporary log held nothing and was removed */
} cg_run_outcome;

void cg_run_summary(FILE *out, const cg_run_logs *logs, cg_run_outcome *res);

#endif
