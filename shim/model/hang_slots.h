/* What each thread is waiting in, for the hang watch (CAPGUARD_HANG_S,
 * decide/hang_watch.c): a slot a thread, holding the blocking call it is in
 * (a synchronize, a capture's end) with when it began, and the capture it
 * has open with when it began and where. The watcher thread reads them; the
 * wrappers write them with relaxed atomic stores, and only while the watch
 * is on (cg_hang_s != 0): with it off, a blocking call's wrapper pays one
 * load of cg_hang_s and nothing else. Nothing here calls the driver. */
#ifndef CAPGUARD_HANG_SLOTS_H
#define CAPGUARD_HANG_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

/* Seconds a blocking call or an open capture may last before it is said; 0:
 * the watch is off. Set once at start-up, before any wrapper runs. */
extern unsigned cg_hang_s;

#define CG_HANG_SLOTS 512 /* threads watched at once (a slot is given back at the thread's end) */
#define CG_HANG_SITE 256

typedef struct {
  uint64_t tid;         /* 0: free */
  const char *call;     /* the blocking call the thread is in (a static name) */
  uint64_t call_ns;     /* when it began (cg_hang_now); 0: in none */
  uint64_t handle;      /* its stream, event or context */
  void *caller;         /* the wrapper's return address: who called it */
  uint64_t capture_ns;  /* when its open capture began; 0: none */
  uint64_t capture_stream, capture_key;
  char capture_site[CG_HANG_SITE]; /* where it began (Python line), "" unknown */
  void *capture_caller;            /* its native caller, when no Python line */
} cg_hang_slot;

extern cg_hang_slot cg_hang_slots[CG_HANG_SLOTS];

uint64_t cg_hang_now(void); /* CLOCK_MONOTONIC_COARSE, ns */

/* The calling thread's slot is in call (handle, called from caller) from now
 * until cg_hang_call_leave. */
void cg_hang_call_enter(const char *call, uint64_t handle, void *caller);
void cg_hang_call_leave(void);
/* The calling thread began a capture on stream (key: the model's stream
 * key) at site (its Python line, else its native caller, symbolized by the
 * watcher if it has to say it). */
void cg_hang_capture_begun(uint64_t stream, uint64_t key, const void *site);
/* The capture on key is over, whichever thread began it; id and
 * began_site (a cg_begin_site, copied) name the latest graph captured in
 * this process (cg_hang_latest_graph), symbolized only when asked. */
void cg_hang_capture_over(uint64_t key, uint64_t id, const void *began_site, bool graph);
/* The latest capture that ended with a graph: its id (0: none) and where it
 * began, symbolized into buf (the watcher's thread). */
uint64_t cg_hang_latest_graph(char *buf, unsigned cap);

#endif
