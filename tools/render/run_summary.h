/* The few lines capguard run prints after its command ends: captures, calls
 * during capture by verdict, what to do next as a command to paste. Printed
 * from the report of the run (meaning/report.h) and the findings table's
 * advice to a run, both built by the command (cmd/run_end.c). */
#ifndef CAPGUARD_RUN_SUMMARY_H
#define CAPGUARD_RUN_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>

#include "report.h"
#include "run_advice.h"

typedef struct {
  const cgr_report *report;  /* NULL when the log has nothing to analyse */
  const cgr_run_advice *adv; /* with report */
  const char *nothing;       /* without report: the findings table's sentence for it (NULL: none) */
  const char *incomplete;    /* why the log may hold less ("" when it does not) */
  const char *shown;         /* the log's name, printable */
  const char *shown_path;    /* the log as the user named it (may hold %p) */
  bool temporary;            /* capguard run made the log */
  bool verdict_follows;      /* prime learn or check says what to do, and where the log is */
  long long pid;             /* the command's pid */
  int signal;                /* the signal that killed it (0: it exited) */
} cg_run_summary_in;

void cg_run_summary_print(FILE *out, const cg_run_summary_in *in);

#endif
