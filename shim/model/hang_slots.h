/* What each thread is waiting in, for the hang watch (CAPGUARD_HANG_S,
 * decide/hang/hang_watch.c): a slot a thread, holding the blocking call it is in
 * (a synchronize, a capture's end) with when it began. No clock is read
 * and nothing is copied: a call is a number the slot counts, and the
 * watcher times each number from when it first sees it (a look every
 * quarter of the limit, at most 1 s: said at most that late). A capture
 * open too long is the model's to say (cg_captures_open_now): its begin
 * and end mark nothing here. The wrappers write the slots with relaxed
 * atomic stores, and only while the watch is on (cg_hang_s != 0): with it
 * off, a blocking call's wrapper pays one load of cg_hang_s and nothing
 * else. Nothing here calls the driver. */
#ifndef CAPGUARD_HANG_SLOTS_H
#define CAPGUARD_HANG_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

/* Seconds a blocking call or an open capture may last before it is said; 0:
 * the watch is off. Set once at start-up, before any wrapper runs. */
extern unsigned cg_hang_s;

#define CG_HANG_SLOTS 512 /* threads watched at once (a slot is given back at the thread's end) */

typedef struct {
  uint64_t tid;         /* 0: free */
  const char *call;     /* the blocking call the thread is in (a static name) */
  uint64_t call_seq;    /* which call (the slot's count, never 0); 0: in none */
  uint64_t handle;      /* its stream, event or context */
  void *caller;         /* the wrapper's return address: who called it */
  void *caller_slot;    /* where that address is on the thread's stack: the callers above it are read
                           from there (stack_scan.c) while the thread waits */
  uint64_t count;       /* the owner's: calls entered */
  void *py_state;       /* the thread's Python thread state, taken when it claimed the slot; NULL none */
} cg_hang_slot;

extern cg_hang_slot cg_hang_slots[CG_HANG_SLOTS];

uint64_t cg_hang_now(void); /* CLOCK_MONOTONIC_COARSE, ns */

/* The calling thread's slot, NULL until its first blocking call or capture
 * claims one (or when the table is full). */
extern __thread cg_hang_slot *cg_hang_mine __attribute__((tls_model("initial-exec")));
void cg_hang_call_enter_slow(const char *call, uint64_t handle, void *caller, void *caller_slot);

/* The calling thread's slot is in call (handle, called from caller, whose
 * address the stack holds at caller_slot) from now until
 * cg_hang_call_leave: a few stores, inline. */
static inline __attribute__((always_inline)) void cg_hang_call_enter(const char *call, uint64_t handle, void *caller,
                                                                    void *caller_slot) {
  cg_hang_slot *s = cg_hang_mine;
  if (__builtin_expect(!s, 0)) {
    cg_hang_call_enter_slow(call, handle, caller, caller_slot);
    return;
  }
  __atomic_store_n(&s->call, call, __ATOMIC_RELAXED);
  __atomic_store_n(&s->handle, handle, __ATOMIC_RELAXED);
  __atomic_store_n(&s->caller, caller, __ATOMIC_RELAXED);
  __atomic_store_n(&s->caller_slot, caller_slot, __ATOMIC_RELAXED);
  __atomic_store_n(&s->call_seq, ++s->count, __ATOMIC_RELEASE); /* the rest is read after this */
}
static inline __attribute__((always_inline)) void cg_hang_call_leave(void) {
  cg_hang_slot *s = cg_hang_mine;
  if (s)
    __atomic_store_n(&s->call_seq, 0, __ATOMIC_RELAXED);
}
#endif
