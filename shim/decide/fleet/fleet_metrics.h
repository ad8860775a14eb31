/* The fleet's view of a process (docs/fleet.md): capture time in the
 * summary, and with CAPGUARD_METRICS=DIR the metrics file, written at exit
 * and at most once a second while captures happen, never on a capture's
 * path: after a capture's end has returned, or at a graph launch, and only
 * while nothing captures. */
#ifndef CAPGUARD_FLEET_METRICS_H
#define CAPGUARD_FLEET_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "capguard/event.h"
#include "capture_time.h"

/* The capture time and the rank into the exit's summary; began: where the
 * slowest began (CG_SLOWEST_CAPTURES texts), symbolized now. */
void cg_fleet_summary(cg_summary *s, char (*began)[CG_BEGAN_TEXT]);
/* The process's series from its start, with their zero values: written once,
 * at the first load or begin made while nothing captures, with the GPU's
 * architecture of the current context (docs/fleet.md: an alert on
 * increase() sees a series that was there before it grew). */
extern bool cg_fleet_started;
void cg_fleet_start(void);
static inline void cg_fleet_start_once(void) {
  if (__builtin_expect(!__atomic_load_n(&cg_fleet_started, __ATOMIC_RELAXED), 0))
    cg_fleet_start();
}
/* A capture ended and its end is over. */
void cg_fleet_after_capture(void);
/* A graph launch with cg_launch_watch set (route/graph_wrappers.c). */
void cg_fleet_graph_launch(void);
/* The last metrics file, from the exit's summary. */
void cg_fleet_metrics_at_exit(const cg_summary *s);
void cg_fleet_atfork_child(void);

#endif
