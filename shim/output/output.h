/* Where capguard's words go: one-line warnings and event reports on stderr
 * (identical events counted, not reprinted), and every event in the JSON
 * Lines log (CAPGUARD_LOG). Each line leaves in a single write(2), so lines
 * from several threads or processes never interleave. */
#ifndef CAPGUARD_OUTPUT_H
#define CAPGUARD_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/clock.h" /* cg_now_ns: the log's clock */
#include "capguard/event.h"

/* Open the log named by the configuration (one warning if it cannot be). */
void cg_output_open_log(void);
/* A log not there at start-up is created now, at the first use of the driver
 * (before any wrapper sees it): a process that never uses CUDA leaves none. */
void cg_output_open_deferred_log(void);
/* The "process" record, written once, when the process first uses the driver. */
void cg_output_process(int driver_version);
/* An event's native stack as return addresses, with room for their names:
 * symbolised (e->native) only when the event is written, to stderr or the
 * log, and then searched for NCCL's communicator set-up (e->nccl_setup,
 * capguard/nccl_frames.h); one that is only counted costs no dladdr. */
typedef struct {
  void *const *frames;
  size_t n;
  const char **names; /* room for n */
  char *buf;
  size_t cap;
} cg_output_native;
void cg_output_event(cg_event *e, const cg_output_native *raw);
/* The event in the log only (no stacks): what the hang watcher says on
 * stderr in its own words. */
void cg_output_event_to_log(cg_event *e);
void cg_output_capture(const cg_capture_record *r);
/* Whether cg_output_capture would write anything for a capture that ended
 * broken or not: a log is open, or a broken capture is said on stderr. A
 * capture nothing describes is not symbolized. */
bool cg_output_wants_capture(bool broken);
/* The summary line on stderr and the "summary" record in the log. */
void cg_output_summary(cg_summary *s);
/* After fork: the child starts with nothing counted and nothing held. */
void cg_output_atfork_child(void);

#endif
