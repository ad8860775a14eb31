/* What the analysis of a log holds (analysis.c fills it): its own
 * header, so that the findings table reads it while the analysis calls the
 * table, and neither's header includes the other's. */
#ifndef CAPGUARD_ANALYSIS_TYPES_H
#define CAPGUARD_ANALYSIS_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/log_schema.h"
#include "finding_types.h"
#include "log_reader.h"

typedef struct {
  size_t capture;      /* index into log->caps */
  long first_event;    /* index into log->evs of the first breaking call, -1 if none logged */
} cgr_broken;

typedef struct {
  const char *name;    /* interned: equal names are equal pointers */
  size_t loads;        /* load calls during capture whose image holds it (served ones included) */
  size_t served;       /* of loads: served from the priming file */
  size_t first_event;  /* where it was first seen */
  bool broke;          /* a load of it was refused (or rescued): it needs warming up or priming */
  size_t with_options; /* of loads not served: made with JIT or library options, so never recorded */
} cgr_kernel;

typedef struct {
  const char *site;    /* interned (cgl_event.site) */
  size_t count;        /* calls during capture made there (every verdict) */
  size_t first_event;
  const char **calls;  /* distinct calls made there */
  size_t n_calls;
  const char **kernels; /* distinct names loaded from this site */
  size_t n_kernels;
} cgr_site;

typedef struct cgr_analysis {
  const cgl_log *log;
  cgr_broken *broken;
  size_t n_broken;
  /* Stale reads the stale-pointer check named (docs/stale.md): one per
   * process, graph exec and allocation, whether its free, its launch or both
   * were logged. Silent corruption: counted as a broken capture is. */
  size_t n_stale_reads;
  cgr_kernel *kernels;
  size_t n_kernels;
  cgr_site *sites;
  size_t n_sites;
  struct cgr_site_block *site_blocks; /* where the sites' calls and kernels are (analysis.c) */
  size_t captures;     /* captures begun (from summaries where known, else seen) */
  size_t open_at_exit; /* captures still open when their process exited (their records say so) */
  size_t open_unbroken; /* of those, the ones nothing broke (not in broken) */
  /* Calls made during capture, by event kind and by verdict, each in the
   * schema's row order; index CG_EV_KIND_COUNT / CG_VERDICT_COUNT counts words
   * this reader does not know (a newer capguard's). Each array sums to calls. */
  size_t calls;
  size_t events[CG_EV_KIND_COUNT + 1];
  size_t verdicts[CG_VERDICT_COUNT + 1];
  size_t repeats;          /* calls like one logged, counted in capture records, not logged again */
  size_t offending_loads;  /* loads not served from the priming file */
  /* of those, the loads made with JIT or library options (the CUDA runtime's
   * lazy loading passes them): capguard never serves them, so never records them */
  size_t loads_with_options;
  size_t unloads_deferred; /* of unloads: put off by guard mode until the capture ended */
  /* Calls other than loads and unloads (which have findings of their own)
   * with a routine verdict (the verdict table's flag): calls that break a
   * capture without capguard, answered by guard mode so that it survived;
   * kept_by counts them by verdict. */
  size_t kept, kept_by[CG_VERDICT_COUNT];
  size_t loads_refused;    /* module or library loads refused during capture (by the driver or emulation) */
  size_t skipped_arch;     /* priming records not preloaded: built for another GPU architecture */
  long long skipped_sm, device_sm;
  /* per process of the log, 16 bytes (a million of them at the report's
   * peak): 4-byte counts, as a log holds fewer than 2^31 captures and calls
   * (log_reader.h); the captures a process began read cgr_proc_captures,
   * which takes a larger count from its summary */
  struct cgr_proc_stats {
    uint32_t seen, broken, served, calls; /* seen: its captures in the log */
  } *procs;
  bool log_incomplete; /* a process's summary says its log lost lines (full disk, I/O error) */
  size_t recorded, primed_loaded; /* from summaries */
  /* Processes that used CUDA and wrote no summary: killed (SIGKILL, the OOM
   * killer), crashed, still running, or their lines were cut from the log.
   * What they did after their last line is unknown. */
  size_t ended_early;
  /* Loads during capture in guard mode by such processes: the shim records an
   * image as it loads it, so these were recorded though no summary says so. */
  size_t recorded_unsaid;
  size_t primed_unused;            /* the most images one process preloaded and never used */
  /* Every run of the whole log (cgl_group_runs), and which one this analysis
   * covers (SIZE_MAX: all of them). */
  struct cgr_run_stats {
    size_t procs, captures, broken, calls, served;
    size_t cuda, ended_early; /* of procs: those that used CUDA, those that left no exit record */
  } *runs;
  size_t n_runs, shown_run;
  const cgl_log *all;  /* the whole log the runs are of */
  cgf_list advice;     /* what to do: the findings (findings.h) that hold for the report */
  cgf_list *run_advice; /* every run reported (--all) of several: each run's own advice, n_runs
                           lists (NULL otherwise), so that one run's advice is not mixed with
                           another's */
  cgf_list escapes_note; /* the text report's closing note on escaped calls (CGF_ESCAPES) */
} cgr_analysis;

/* The captures process p began: what its summary says when it exited
 * cleanly and says more than the log shows, else those seen. */
static inline size_t cgr_proc_captures(const cgr_analysis *a, size_t p) {
  const cgl_process *pr = &a->log->procs[p];
  size_t seen = a->procs[p].seen;
  return pr->has_summary && cgl_process_num(pr, CGL_PR_CAPTURES) > 0 &&
                 (unsigned long long)cgl_process_num(pr, CGL_PR_CAPTURES) > seen
             ? (size_t)cgl_process_num(pr, CGL_PR_CAPTURES)
             : seen;
}

#endif
