/* Loads on the request path: once an engine serves, a module or library load
 * costs a request its latency instead of breaking a capture. Serving begins
 * at the first graph launch after the start-up's last capture: a launch
 * after a capture's end is a candidate, confirmed when no capture begins
 * within the quiet window after it (a start-up that captures in waves is
 * not cut early); or CAPGUARD_SERVING_AFTER seconds after the process
 * started. Each load after it is timed, named (an event of kind
 * request-path-load) and counted; in guard mode it is recorded in the
 * priming file, and served from it on the next run (docs/request-path.md).
 * Launches pay nothing: the first launch after a capture's end is seen
 * through the fleet's launch watch (capture_time.h); a load outside capture
 * pays one load of cg_serving_watch, and a clock read or two once set. */
#ifndef CAPGUARD_SERVING_H
#define CAPGUARD_SERVING_H

#include <cuda.h>
#include <stdint.h>

#include "calls.h"
#include "capguard/event.h"

/* The quiet window: a capture beginning this soon after the candidate
 * launch makes it part of the start-up. */
#define CG_SERVING_QUIET_NS (2000000000ull)

/* Non-zero once a load outside capture may be on the request path. */
extern unsigned cg_serving_watch;

/* CAPGUARD_SERVING_AFTER, read once at start-up (a bad value said in one line). */
void cg_serving_init(void);
/* A capture began / is over (the model's clock is not needed: monotonic inside). */
void cg_serving_capture_begun(void);
void cg_serving_capture_over(void);
/* A graph launch seen through the launch watch (CG_WATCH_SERVING). */
void cg_serving_graph_launch(void);
/* A load made while nothing captured and cg_serving_watch is set: made
 * (or served from the priming file) into *r, timed, and said when it is on
 * the request path. false, nothing made, when a capture has begun since
 * the wrapper looked: the capture's path (cg_guard_load) decides then. */
bool cg_serving_load(const cg_load *l, CUresult *r);
/* The request-path figures (serving confirmed now if the window passed;
 * at exit, a candidate no capture followed is confirmed: the run served). */
void cg_serving_summary(cg_summary *s, bool at_exit);
void cg_serving_atfork_child(void);

#endif
