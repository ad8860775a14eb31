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
 * exec alive): the frees' one load. */
extern unsigned cg_stale_live;
static inline bool cg_stale_watching(void) { return __atomic_load_n(&cg_stale_live, __ATOMIC_RELAXED) != 0; }

/* Execs a free touched since their last launch, counted by a hash of the
 * exec's handle: a launch loads its own slot (the x86-64 fast path of
 * route/graph_wrappers.c computes the same hash), so that other execs
 * being suspect sends it nowhere slower (a shared slot: the exact check). */
#define CG_STALE_SLOTS 65536
extern unsigned cg_stale_suspect_slots[CG_STALE_SLOTS];
/* The slots' sum: while it is 0 (every healthy replay), a launch's fast path
 * loads it alone and no slot. */
extern unsigned cg_stale_suspects_any;
static inline unsigned cg_stale_slot(const void *exec) {
  return ((uint32_t)(uintptr_t)exec * 0x9E3779B1u) >> 16;
}
static inline bool cg_stale_launch_due(const void *exec) {
  return __atomic_load_n(&cg_stale_suspect_slots[cg_stale_slot(exec)], __ATOMIC_RELAXED) != 0;
}

/* How a free names the memory it gives back. */
typedef enum {
  CG_STALE_AT,      /* the start of an allocation (cuMemFree, cuMemFreeAsync, cuMemFreeHost) */
  CG_STALE_ANY,     /* memory capguard cannot place (cuMemPoolTrimTo): every watched allocation
                       is checked at its exec's next launch */
  CG_STALE_RANGE,   /* an address range unmapped (cuMemUnmap): its pieces checked at their
                       execs' next launch */
  CG_STALE_MAP,     /* not a free: a piece mapped (cuMemMap; aux its physical handle) */
  CG_STALE_RELEASE, /* a physical allocation's handle released (cuMemRelease; aux the handle):
                       its memory lives while mapped, the handle may come back */
} cg_stale_how;
/* Whether a row of this kind is told with the check on and nothing watched
 * yet: the record of mapped pieces must be whole. */
#define CG_STALE_KEEPS_RECORD(how) ((how) >= CG_STALE_RANGE)

/* A capture ended with a graph (guard.c): where it began, kept for the
 * graph's instantiation (a bounded ring: the newest 256 graphs). */
void cg_stale_captured(CUgraph g, const cg_begin_site *site, uint64_t capture_id);
/* An exec instantiated from g: g walked and its reads watched, if nothing
 * captures now (the walk's queries wait for no capture; else said once). */
void cg_stale_instantiated(CUgraphExec exec, CUgraph g);
/* The exec destroyed (cuGraphExecDestroy returned success): forgotten. */
void cg_stale_exec_destroyed(CUgraphExec exec);
/* A free the driver accepted (or a map, a release: how): at an
 * allocation's start, each live exec reading that memory is reported, once
 * per exec and allocation, with the free's stacks; an unmap only marks the
 * pieces for their execs' next launch. aux: how's handle. */
void cg_stale_freed(const char *call, uint64_t addr, uint64_t len, cg_stale_how how, uint64_t aux);
/* A launch of exec: each allocation a free touched since is asked for its
 * buffer id (a mapped piece: capguard's record, which physical allocation
 * is mapped there now); one freed, unmapped, or another buffer now, is
 * reported once per exec and allocation. */
void cg_stale_launch(const char *call, CUgraphExec exec);
/* Fork: the child's lock is a fresh one. */
void cg_stale_atfork_child(void);
/* Stale reads named so far: one per exec and allocation (its free, its launch or both). */
uint64_t cg_stale_reads(void);

#endif
