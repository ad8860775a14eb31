/* What a person needs from a log: the captures that broke and the first call
 * that broke each, the offending kernels and call sites (deduplicated, with
 * counts), and the advice that follows. Shared by the text, JSON and HTML
 * renderings and by run's closing summary. */
#ifndef CAPGUARD_REPORT_ANALYSIS_H
#define CAPGUARD_REPORT_ANALYSIS_H

#include "log_reader.h"

typedef struct {
  size_t capture;      /* index into log->caps */
  long first_event;    /* index into log->evs of the first breaking call, -1 if none logged */
} cgr_broken;

typedef struct {
  const char *name;
  size_t count;        /* events that loaded it during capture */
  size_t first_event;  /* where it was first seen */
  bool broke;          /* a load of it was refused (or rescued): it needs warming up or priming */
} cgr_kernel;

typedef struct {
  char site[512];
  size_t count;
  size_t first_event;
  const char *calls[4];
  size_t n_calls;
  const char **kernels; /* distinct names loaded from this site */
  size_t n_kernels;
} cgr_site;

typedef struct {
  const cgl_log *log;
  cgr_broken *broken;
  size_t n_broken;
  cgr_kernel *kernels;
  size_t n_kernels;
  cgr_site *sites;
  size_t n_sites;
  size_t captures;     /* captures begun (from summaries where known, else seen) */
  size_t loads, unloads, other_events;
  size_t unloads_deferred; /* of unloads: put off by guard mode until the capture ended */
  size_t loads_refused;    /* module or library loads refused during capture (by the driver or emulation) */
  size_t skipped_arch;     /* priming records not preloaded: built for another GPU architecture */
  long long skipped_sm, device_sm;
  size_t refused, emulated, allowed, served, rescued, deferred, failed;
  size_t recorded, primed_loaded; /* from summaries */
  char *advice[8];
  size_t n_advice;
} cgr_analysis;

/* An event that counts against the workload: everything but loads served from the priming pool. */
bool cgr_offending(const cgl_event *e);

/* How to converge in fewer runs than one per breaking load. */
extern const char cgr_faster_advice[];

void cgr_analyse(const cgl_log *log, cgr_analysis *a);

/* Why a breaking call broke its capture, in words, e.g. "the driver (CUDA 12.2)
 * refused it: drivers before 12.3 refuse module loads during capture". */
void cgr_why(const cgl_event *e, char *buf, size_t cap);
/* Up to max kernel names of an event, comma-separated ("" when none); ", ..." when cut. */
void cgr_kernel_list(const cgl_event *e, size_t max, char *buf, size_t cap);
void cgr_free(cgr_analysis *a);

#endif
