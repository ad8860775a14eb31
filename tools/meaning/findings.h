/* What a log means, in one table (findings.c): each row a condition over
 * what was found, a sentence, and the commands that act on it. The report
 * (text, JSON, HTML), capguard run's closing summary, and prime learn and
 * prime check all ask this table; none of them words advice of its own, and
 * the shim says only facts and where the details are. */
#ifndef CAPGUARD_FINDINGS_H
#define CAPGUARD_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "capguard/log_schema.h"
#include "finding_types.h"
#include "log_reader.h"

struct cgr_analysis;

/* Who asks: a row says which of them it speaks to. */
enum {
  CGF_REPORT = 1u << 0, /* capguard report: every row that holds, in table order */
  CGF_NEXT = 1u << 1,   /* run's summary, "next:": the first row that holds */
  CGF_FASTER = 1u << 2, /* run's summary, "faster:" */
  CGF_NOTE = 1u << 3,   /* run's summary, "note:" */
  CGF_LEARN = 1u << 4,  /* prime learn's verdict: the first row that holds */
  CGF_CHECK = 1u << 5,  /* prime check's verdict: the first row that holds */
  CGF_NO_RECORDS = 1u << 6, /* run's summary of a log with nothing to analyse: the first row that holds */
  CGF_SAID = 1u << 7,   /* run's summary, each on its own line after the broken captures */
  CGF_ESCAPES = 1u << 8, /* the text report's "Escaped captures" section, its closing note */
  CGF_STALE_GROUP = 1u << 9, /* a group of the report's stale section: what to do (the first row that holds) */
};

/* What prime learn / prime check saw in their run. */
typedef struct {
  size_t procs, loads, served, refused; /* procs: processes that used CUDA */
  size_t failed;                        /* loads during capture the driver failed (not recorded) */
  /* loads not served for a reason learning again would not change: made with
   * an option capguard cannot reproduce (foreign names one), or asking other
   * options than the file recorded for the same bytes (differ says how) */
  size_t foreign, differ;
  const char *foreign_name, *differ_how;
  const char *first_failed; /* the first of them in words ("cuModuleLoadData: CUresult ..."), or NULL */
  long long old_driver; /* a driver (or emulation) before 12.3 that refused loads, 0 if none */
  long long device_sm;  /* the GPU's architecture, 0 if unknown */
  unsigned learned_arch; /* learn: the architecture of what it recorded, 0 if none */
  int status;           /* the command's exit status */
  const char *prime;    /* the priming file */
  char *const *cmd;     /* the command, NULL-terminated */
} cgf_prime_run;

typedef struct {
  const struct cgr_analysis *a; /* the report's and the run summary's analysis */
  cg_run_mode mode;             /* run summary: the mode the run ran in */
  const char *incomplete;       /* run summary: why the log may hold less ("" when not) */
  const cgl_log *log;           /* run summary, CGF_NO_RECORDS: the log, with nothing to analyse */
  const char *log_shown;        /* run summary: the log's name as shown */
  const cgf_prime_run *prime_run; /* prime learn and prime check */
  long long signal_pid;         /* run summary: the command's pid when a signal killed it */
  int signal;                   /* run summary: that signal (0: it exited) */
  bool prime_readonly;          /* run summary: CAPGUARD_PRIME_READONLY=1, nothing is recorded */
  bool prime_unusable;          /* run summary: run said the priming file cannot be used */
  bool stale_group;             /* CGF_STALE_GROUP: a group of stale reads is asked about */
  bool stale_freed;             /* CGF_STALE_GROUP: a free of its memory was seen (else only a replay of
                                   memory that changed since the capture) */
} cgf_facts;

/* The findings for an audience (one CGF_ bit), appended to out; first_only:
 * stop at the first row that holds. */
void cgf_collect(const cgf_facts *f, unsigned audience, bool first_only, cgf_list *out);
/* The first finding for an audience, or NULL; kept in *list (free it). */
const cgf_finding *cgf_first(const cgf_facts *f, unsigned audience, cgf_list *list);
/* The finding on one line: sentence, then each command after its lead
 * (malloc'd; NULL when out of memory). */
char *cgf_line(const cgf_finding *x);
/* The finding as a terminal shows it: first, then the sentence; each
 * command's lead on a line after indent, and the command alone on the next
 * (indent and two spaces), so that it is copied whole and runs as shown. */
void cgf_print(FILE *out, const cgf_finding *x, const char *first, const char *indent);
void cgf_list_free(cgf_list *l);

#endif
