/* The fleet's view of a process (docs/fleet.md): capture time in the
 * summary, and with CAPGUARD_METRICS=DIR the metrics file, written at exit
 * and at most once a second while captures happen, never on a capture's
 * path: after a capture's end has returned, or at a graph launch, and only
 * while nothing captures. */
#ifndef CAPGUARD_FLEET_METRICS_H
#define CAPGUARD_FLEET_METRICS_H

#include <stdint.h>

#include "capguard/event.h"
#include "capture_time.h"

/* The capture time and the rank into the exit's summary; began: where the
 * slowest began (CG_SLOWEST_CAPTURES texts), symbolized now. */
void cg_fleet_summary(cg_summary *s, char (*began)[CG_BEGAN_TEXT]);
/* A capture ended and its end is over. */
void cg_fleet_after_capture(void);
/* A graph launch with cg_launch_watch set (route/graph_wrappers.c). */
void cg_fleet_graph_launch(void);
/* The last metrics file, from the exit's summary. */
void cg_fleet_metrics_at_exit(const cg_summary *s);
void cg_fleet_atfork_child(void);

#endif
