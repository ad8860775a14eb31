/* Capture time accounted: how many captures ended and the wall time spent
 * inside them, the slowest few with where each began, the first begin and
 * the first graph launch after it (docs/log-format.md, the summary's
 * capture_ns and what follows it). A capture costs an add or two and a
 * compare (its begin and end times are the model's, read anyway); only a
 * capture slower than the slowest kept so far takes a lock. */
#ifndef CAPGUARD_CAPTURE_TIME_H
#define CAPGUARD_CAPTURE_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "capguard/capture_model.h"
#include "capguard/event.h"

/* What the graph-launch wrappers look at before their tail call to the
 * driver: 0 on their fast path. CG_WATCH_REPLAY: a capture has begun and no
 * graph launch was seen since; CG_WATCH_METRICS: the metrics file is due
 * once nothing captures (decide/fleet/fleet_metrics.c); CG_WATCH_SERVING: a
 * capture ended and no graph launch was seen since (decide/serving/serving.c). */
/* CG_WATCH_HANG: CAPGUARD_HANG_S is set; every launch records its
 * completion marker (decide/hang/hang_watch.c), for the process's life. */
enum { CG_WATCH_REPLAY = 1, CG_WATCH_METRICS = 2, CG_WATCH_SERVING = 4, CG_WATCH_HANG = 8 };
extern unsigned cg_launch_watch;
/* A bit of it set or cleared: when the whole turns nonzero or zero, the
 * driver's graph-launch targets follow (cg_driver_launch_watch), which the
 * x86-64 fast path jumps through instead of testing the word. */
void cg_launch_watch_set(unsigned bit);
void cg_launch_watch_clear(unsigned bit);

/* A capture began (the clock is read for the first only). */
void cg_capture_time_begun(void);
/* A capture is over. Returns true when it is among the slowest and its
 * begin site (malloc'd; the capture's user) is kept: the caller must not
 * free it then. */
bool cg_capture_time_ended(const cg_capture *closed, void *site);
/* A graph launch: the first after a capture began is the first replay. */
void cg_capture_time_launch(uint64_t mono_ns); /* CLOCK_MONOTONIC now */
/* The figures so far. With began (an array of CG_SLOWEST_CAPTURES texts),
 * where each of the slowest began is written there too (dladdr: at exit). */
#define CG_BEGAN_TEXT 512
void cg_capture_time_read(cg_summary *s, char (*began)[CG_BEGAN_TEXT]);
/* After fork: the child has captured nothing yet. */
void cg_capture_time_atfork_child(void);

#endif
