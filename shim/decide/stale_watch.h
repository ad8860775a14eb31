/* The stale-pointer check (CAPGUARD_STALE=1, docs/stale.md): which memory
 * each live graph exec reads, and the frees and launches that make a replay
 * read memory that is no longer its own. Never changes a call: the wrappers
 * tell it what the driver did, and it reports. */
#ifndef CAPGUARD_STALE_WATCH_H
#define CAPGUARD_STALE_WATCH_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "live_captures.h"

/* Graph execs watched (nonzero only with CAPGUARD_STALE=1 and a walked
 * exec alive), and reads a free touched that no launch has checked since:
 * the wrappers' one load each. */
extern unsigned cg_stale_live, cg_stale_suspects;
static inline bool cg_stale_watching(void) { return __atomic_load_n(&cg_stale_live, __ATOMIC_RELAXED) != 0; }
static inline bool cg_stale_launch_due(void) { return __atomic_load_n(&cg_stale_suspects, __ATOMIC_RELAXED) != 0; }

/* How a free names the memory it gives back. */
typedef enum {
  CG_STALE_AT,    /* the start of an allocation (cuMemFree, cuMemFreeAsync, cuMemFreeHost) */
  CG_STALE_RANGE, /* an address range (cuMemUnmap) */
  CG_STALE_ANY,   /* memory capguard cannot place (cuMemRelease, cuMemPoolTrimTo): every
                     watched allocation is checked at its exec's next launch */
} cg_stale_how;

/* A capture ended with a graph (guard.c): where it began, kept for the
 * graph's instantiation (a bounded ring: the newest 256 graphs). */
void cg_stale_captured(CUgraph g, const cg_begin_site *site, uint64_t capture_id);
/* An exec instantiated from g: g walked and its reads watched, if nothing
 * captures now (the walk's queries wait for no capture; else said once). */
void cg_stale_instantiated(CUgraphExec exec, CUgraph g);
/* The exec destroyed (cuGraphExecDestroy returned success): forgotten. */
void cg_stale_exec_destroyed(CUgraphExec exec);
/* A free the driver accepted: each live exec reading that memory is
 * reported, once per exec and allocation, with the free's stacks. */
void cg_stale_freed(const char *call, uint64_t addr, uint64_t len, cg_stale_how how);
/* A launch of exec: each allocation a free touched since is asked for its
 * buffer id; one freed, or freed and allocated again, is reported once per
 * exec and allocation. */
void cg_stale_launch(const char *call, CUgraphExec exec);
/* Fork: the child's lock is a fresh one. */
void cg_stale_atfork_child(void);

#endif
