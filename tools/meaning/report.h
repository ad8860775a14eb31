/* The report: everything a rendering of a log shows, computed once. The
 * command (cmd/) reads the log and builds this value; every rendering (the
 * report's text, JSON, HTML and trace, run's closing summary, prime learn's
 * and prime check's verdicts) prints from it and never reads the log, runs
 * the analysis or asks the findings table again. A new section is one
 * builder here and one row in render/'s section table (HACKING.md). */
#ifndef CAPGUARD_REPORT_H
#define CAPGUARD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "capture_totals.h"
#include "hang_lineup.h"
#include "hang_words.h"
#include "load_facts.h"
#include "rank_view.h"
#include "request_path.h"
#include "stale_groups.h"

/* The records a report lists, as read: arrays shared with the log they
 * were read into, not copies (a report of a million processes costs no
 * second copy of them), and what the reading said of its input. */
typedef struct {
  const char *const *files;
  size_t n_files;
  const cgl_process *procs;
  size_t n_procs;
  const cgl_capture *caps;
  size_t n_caps;
  const cgl_event *evs;
  size_t n_evs;
  const cgl_stale *stale;
  size_t n_stale;
  const cgl_hang *hangs;
  size_t n_hangs;
  const cgl_request *reqs;
  size_t n_reqs;
  const cgl_run *runs;
  size_t n_runs;
  size_t lines, records, malformed, newer, unknown, cut_files;
  const char *first_malformed; /* "file:line: why" of the first malformed line */
} cgr_rows;

/* Work that escaped a capture (verdict escaped), grouped by kind, call and
 * site in the order first logged: the group's first event, and how many. */
typedef struct {
  const cgl_event *first;
  size_t count;
} cgr_escape_group;

typedef struct cgr_report {
  cgr_analysis a;  /* counts, broken captures, kernels, sites, and the advice */
  cgr_rows rows;   /* the run (or runs) reported */
  cgr_rows whole;  /* the whole log, whose runs the runs' table lists */
  size_t cuda;     /* processes that used CUDA */
  uint32_t *order; /* the processes as every rendering lists them: by run, then pid */
  /* capture time as the processes summed it, and its sentence ("" when none said) */
  cgr_capture_time capture_time;
  char capture_time_line[1100];
  cgr_rank_view ranks; /* ranks.n < 2: no job of several ranks */
  /* loads on the request path: which count (n_reqs flags), their totals,
   * and how many counted in each process (NULL when none did) */
  bool *request_counts;
  cgr_request_totals requests;
  size_t *requests_by_proc;
  /* stale reads, grouped, each group with its advice */
  cgr_stale_group *stale_groups;
  size_t n_stale_groups;
  cgf_list stale_advice[2]; /* the findings table's advice: [0] memory replaced, [1] freed */
  /* hangs: the ranks lined up, then each hang in words (none: nothing to say) */
  cgm_lineup *hang_lineup;
  size_t n_hang_lineup;
  cgr_hang_said *hangs;
  size_t n_hangs;
  bool any_hang;
  cgr_load_facts loads; /* the run's loads during capture, as prime learn and check count them */
  cgr_escape_group *escapes;
  size_t n_escapes;
} cgr_report;

/* Builds the report of log; all is the whole log log is one run of (NULL:
 * log is the whole log and its runs are not counted), shown the run
 * reported (SIZE_MAX: all of them). */
void cgr_report_build(cgr_report *r, const cgl_log *log, const cgl_log *all, size_t shown);
void cgr_report_free(cgr_report *r);

/* Row words, said alike by every rendering. */
/* "pid 1001", or "pid 1001 (run2.jsonl)" when several logs were read. */
void cgr_report_process_label(const cgr_report *r, size_t proc, char *buf, size_t cap);
/* The last thing process p, which ended without an exit record, logged (cgr_ended_last). */
void cgr_report_ended_last(const cgr_report *r, size_t p, char *buf, size_t cap);
/* What broke capture c (cgr_first_offender, cgr_offender_phrase). */
cgl_broken_by cgr_report_first_offender(const cgr_report *r, size_t capture, long first_event,
                                        cgl_offender *out);
void cgr_report_offender_phrase(const cgr_report *r, size_t capture, long first_event, char *buf, size_t cap);
/* The processes of the whole log, by run, then pid: malloc'd (free it). */
uint32_t *cgr_report_all_order(const cgr_report *r);
/* Whether capture c broke (cgl_capture_broken). */
bool cgr_report_capture_broken(const cgr_report *r, size_t capture);
/* The command that runs run again (cgr_rerun_command); false when none. */
bool cgr_report_rerun_command(const cgr_report *r, size_t run, cg_run_mode mode, char *buf, size_t cap);

#endif
