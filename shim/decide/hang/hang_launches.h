/* The hang watch's graph launches (CAPGUARD_HANG_S, decide/hang/hang_watch.c):
 * each live graph exec with where it was captured, the collectives (NCCL
 * kernels) it holds and how many times it was launched; and after each
 * launch a completion marker on its stream, an event from a small pool
 * reused round robin, so that the watcher can name a launch that has not
 * finished. Only with the watch on: with it off, nothing here runs. The
 * pool's events are created only while nothing captures; a marker is
 * recorded only after a launch the driver accepted, while nothing captures;
 * the watcher queries them only while nothing captures, from its own
 * thread in relaxed mode (which no capture prohibits). */
#ifndef CAPGUARD_HANG_LAUNCHES_H
#define CAPGUARD_HANG_LAUNCHES_H

#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

#include "live_captures.h"

/* Live execs that hold a collective: nonzero makes an exec's destroy tell
 * this file (one load on the destroy's path, none elsewhere). */
extern unsigned cg_hang_execs_live;

/* A capture ended with graph g (guard.c): where it began (site, which the
 * ring now owns), for the execs instantiated from g (a bounded ring: the
 * newest 64 graphs). Returns the site the ring held before (NULL: none),
 * for the caller to free; site itself when g is NULL. */
#define CG_HANG_GRAPHS 64 /* captured graphs remembered until their instantiation */
extern cg_begin_site *cg_hang_graph_sites[CG_HANG_GRAPHS];
extern unsigned cg_hang_graphs_next;
static inline cg_begin_site *cg_hang_graph_captured(CUgraph g, cg_begin_site *site, uint64_t capture_id) {
  if (!g || !site)
    return site;
  site->graph = (uint64_t)(uintptr_t)g;
  site->capture_id = capture_id;
  unsigned at = __atomic_fetch_add(&cg_hang_graphs_next, 1, __ATOMIC_RELAXED) % CG_HANG_GRAPHS;
  return __atomic_exchange_n(&cg_hang_graph_sites[at], site, __ATOMIC_ACQ_REL);
}
/* The latest capture that ended with a graph: its id (0: none) and where it
 * began, symbolized into buf (the watcher's thread). */
uint64_t cg_hang_latest_graph(char *buf, unsigned cap);
/* exec instantiated from g: its kernels named (the NCCL ones counted). */
void cg_hang_instantiated(CUgraphExec exec, CUgraph g);
void cg_hang_exec_destroyed(CUgraphExec exec);
/* exec launched on s (ptsz: the per-thread variant) and the driver
 * accepted it: counted, and a marker recorded after it on s. On the legacy
 * stream, whose work breaks a capture of a blocking stream begun
 * meanwhile, the marker is recorded under the capture gate held exclusive
 * (no capture begins between the look and the record). */
void cg_hang_launched(CUgraphExec exec, CUstream s, bool ptsz);

/* What the watcher learns of one launch, exec or census row. */
typedef struct {
  uint64_t exec, capture_id, launch, stream; /* launch: which of the exec's launches (1: its first) */
  uint64_t waited_ns;
  unsigned collectives, kernels;   /* NCCL kernels in it, kernels in it */
  char collective[96], kernel[96]; /* the first of each, "" none */
  char site[256];                  /* where its capture began, "" unknown (built by hand) */
} cg_hang_launch_seen;

/* The watcher's look (its thread only): each stream's oldest launch not
 * complete after limit_ns, at most max, into out; returns how many. Each is
 * found once. */
int cg_hang_launches_stuck(uint64_t now, uint64_t limit_ns, cg_hang_launch_seen *out, int max);
/* Whether a launch was made within limit_ns of now. */
bool cg_hang_launching(uint64_t now, uint64_t limit_ns);
/* Whether the watcher's last look found a launch older than its limit
 * still running. */
bool cg_hang_launch_pending(void);
/* The census: live execs launched since the last census (their counts),
 * at most max; returns how many. */
int cg_hang_launch_census(cg_hang_launch_seen *out, int max);
/* Live execs holding a collective: how many, and the first one's site. */
unsigned cg_hang_collective_execs(cg_hang_launch_seen *first);

#endif
