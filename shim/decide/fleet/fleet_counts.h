/* The counts the metrics file has and the summary lacks: loads during
 * capture by verdict, and refusals by call (decide/fleet/fleet_metrics.c). */
#ifndef CAPGUARD_FLEET_COUNTS_H
#define CAPGUARD_FLEET_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "capguard/event.h"
#include "capguard/metrics_format.h"

/* Counts a reported event (report.c, once per event). */
void cg_fleet_count(const cg_event *e);
/* Loads by verdict; up to cap refused calls (the calls' names live as long
 * as the process). Returns how many calls were written. */
size_t cg_fleet_counts_read(uint64_t loads[CG_VERDICT_COUNT], cg_metrics_call *calls, size_t cap);
void cg_fleet_counts_atfork_child(void);

#endif
