#include "hang_slots.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "live_captures.h" /* cg_self_tid */
#include "stack.h"          /* cg_python_this_state */

unsigned cg_hang_s;
cg_hang_slot cg_hang_slots[CG_HANG_SLOTS];

/* The calling thread's slot, claimed at its first blocking call; -2: the
 * table was full (the thread is not watched). */
static __thread int my_slot __attribute__((tls_model("initial-exec"))) = -1;
__thread cg_hang_slot *cg_hang_mine __attribute__((tls_model("initial-exec")));

/* The coarse clock: a few ms of resolution is plenty for a watch in seconds,
 * and it is read from the vDSO without the hardware counter (CLOCK_MONOTONIC
 * cost 100+ ns a read on a VM whose clock source is not the TSC). */
uint64_t cg_hang_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A thread's slot is given back when it ends (returns, pthread_exit, or is
 * cancelled inside a synchronize: the key's destructor runs in each case):
 * what it was in is forgotten before the slot is free, so a thread that is
 * gone is never said to wait, and the slots serve threads that come and go
 * by the thousand. */
static pthread_key_t slot_key;
static pthread_once_t slot_key_once = PTHREAD_ONCE_INIT;
static bool slot_key_made;

static void give_back(void *unused) {
  (void)unused;
  if (my_slot < 0)
    return;
  cg_hang_slot *s = &cg_hang_slots[my_slot];
  __atomic_store_n(&s->call_seq, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->py_state, NULL, __ATOMIC_RELAXED);
  __atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE); /* free, after the rest */
  my_slot = -1; /* a later destructor's synchronize claims one again */
  cg_hang_mine = NULL;
}

static void make_slot_key(void) { slot_key_made = pthread_key_create(&slot_key, give_back) == 0; }

static cg_hang_slot *slot(void) {
  if (my_slot >= 0)
    return &cg_hang_slots[my_slot];
  if (my_slot == -2)
    return NULL;
  uint64_t tid = cg_self_tid();
  for (int i = 0; i < CG_HANG_SLOTS; i++) {
    uint64_t free_ = 0;
    if (__atomic_compare_exchange_n(&cg_hang_slots[i].tid, &free_, tid, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      my_slot = i;
      /* where a wait is said in Python's terms (the watcher reads that
       * thread's frames only while it waits) */
      __atomic_store_n(&cg_hang_slots[i].py_state, cg_python_this_state(), __ATOMIC_RELAXED);
      cg_hang_mine = &cg_hang_slots[i];
      pthread_once(&slot_key_once, make_slot_key);
      if (slot_key_made)
        pthread_setspecific(slot_key, &cg_hang_slots[i]); /* any non-NULL value: the destructor runs */
      return &cg_hang_slots[i];
    }
  }
  my_slot = -2;
  return NULL;
}

void cg_hang_call_enter_slow(const char *call, uint64_t handle, void *caller, void *caller_slot) {
  if (slot())
    cg_hang_call_enter(call, handle, caller, caller_slot);
}

