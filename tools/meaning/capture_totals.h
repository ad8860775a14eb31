/* Capture time as the processes' summaries said it (docs/log-format.md):
 * graphs captured, wall time inside captures, the slowest capture and
 * where it began, the time from the first begin to the first replay. Read
 * from the log only; older logs, which do not say, have none. */
#ifndef CAPGUARD_CAPTURE_TIME_VIEW_H
#define CAPGUARD_CAPTURE_TIME_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "log_reader.h"

typedef struct {
  size_t procs;               /* processes whose summary said their capture time */
  long long timed, graphs, ns;/* captures that ended, those with a graph, time inside them */
  bool has_slowest;
  size_t slowest_proc;        /* the slowest capture of them all */
  long long slowest_id, slowest_ns;
  const char *slowest_began;
  long long to_first_replay_ns; /* the earliest first begin to the earliest first replay after it; -1: none */
} cgr_capture_time;

void cgr_capture_time_of(const cgl_log *log, cgr_capture_time *t);
/* A duration as a person reads it: "41.2 s", "812 ms", "356 us". */
void cgr_duration(long long ns, char *buf, size_t cap);
/* A count with thousands separated: "3,412". */
void cgr_thousands(long long n, char *buf, size_t cap);
/* "3,412 graphs in 41.2 s (slowest 0.8 s at SITE)"; "" when no process
 * said its capture time or none ended. */
void cgr_capture_time_line(const cgr_capture_time *t, char *buf, size_t cap);
/* The capture-time sentence every rendering says: the line above, and, for
 * one run, how long after the first begin the first replay came; "" when no
 * process timed a capture. */
void cgr_capture_time_sentence(const cgl_log *log, char *buf, size_t cap);
/* " rank 3 of 8", " rank 3", or "" when no launcher named one. */
void cgr_rank_words(const cgl_process *pr, char *buf, size_t cap);

#endif
