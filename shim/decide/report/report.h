/* Reporting one call made while a capture prohibited it: the event's
 * common fields, its stacks, the process's counts, and repeats counted
 * rather than reported again. guard.c and breakers.c decide; this says. */
#ifndef CAPGUARD_REPORT_H
#define CAPGUARD_REPORT_H

#include <cuda.h>
#include <stdbool.h>

#include "capguard/event.h"
#include "live_captures.h"
#include "stack.h"

/* Stack buffers for one event; on the heap (cg_report_scratch) because the
 * calling thread may have a small stack and events are rare. */
typedef struct {
  void *frames[CG_MAX_NATIVE_FRAMES]; /* the native stack, symbolised only when written */
  size_t n_frames;
  bool frames_taken;
  const char *native[CG_MAX_NATIVE_FRAMES];
  char native_buf[8192];
  cg_py_frame py[CG_MAX_PY_FRAMES];
  char py_buf[8192];
  char began[512];
  cg_begin_site site; /* where the capture began */
  cg_image_info image;
  char thread_name[17]; /* PR_GET_NAME's 16 bytes and a NUL */
} cg_report_scratch;

/* The calling thread's native stack, taken now into s (cg_report takes it
 * itself when it was not): a caller that also needs where the call was
 * made (cg_report_site) walks the stack once. */
void cg_report_take_stack(cg_report_scratch *s);
/* Where the call was made, from the stack taken (cg_report_take_stack),
 * with the Python line: for a first offender's record. NULL without memory. */
cg_begin_site *cg_report_site(const cg_report_scratch *s);
/* Fills the event's process, thread, clock, driver and stacks, counts it
 * and writes it (stderr and log). Takes the loader's lock: never with the
 * gate or the model's lock held. */
void cg_report(cg_event *e, cg_report_scratch *s);
/* A refusal capguard did not foresee (a capture begun where it could not
 * see it, or after its check): reported all the same, naming the capture
 * that now prohibits the thread, so that no refusal goes unsaid. */
void cg_report_refusal(cg_event *e, cg_report_scratch *s, CUresult r);
/* Room for one event's report, or NULL after the one out-of-memory warning
 * (naming what): taken before a decision, a call without it goes to the
 * driver as without capguard. */
cg_report_scratch *cg_report_room(const char *what);
/* The event reported (refused: as cg_report_refusal, with r) with site as
 * where its capture began (NULL: unknown), and the room freed: s, or, when s
 * is NULL, room taken now (none: the warning, and no report). */
void cg_report_and_free(cg_event *e, cg_report_scratch *s, const cg_begin_site *site, const char *what);
void cg_report_refusal_and_free(cg_event *e, cg_report_scratch *s, const cg_begin_site *site, CUresult r,
                                const char *what);
/* The verdict of a call the driver answered. */
cg_verdict cg_report_verdict_of(CUresult r);
/* True when no identical event (call, verdict, capture, call site) was
 * reported before; otherwise counts it as a repeat of its kind and verdict
 * and returns false. */
bool cg_report_first_sighting(const char *call, cg_event_kind kind, cg_verdict v, uint64_t capture_id,
                              const cg_begin_site *where);

/* The summary's counts; fork and exit bookkeeping. */
void cg_report_counts(uint64_t events[CG_EV_KIND_COUNT], uint64_t verdicts[CG_VERDICT_COUNT]);
void cg_report_atfork_child(void);

#endif
