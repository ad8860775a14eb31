#include "loader_gate.h"

#include <sched.h>
#include <stdint.h>

#include "capguard/clock.h"

#define GATE_WAIT_NS 100000000ull /* 100 ms: a walk takes microseconds */

static unsigned walkers; /* threads inside dl_iterate_phdr through the gate */
static unsigned forking; /* a fork's prepare handler has run, its parent or child handler not yet */

/* Waits, yielding, until *word reads want or GATE_WAIT_NS passed. */
static void wait_for(const unsigned *word, unsigned want) {
  uint64_t start = 0;
  while (__atomic_load_n(word, __ATOMIC_SEQ_CST) != want) {
    uint64_t now = cg_monotonic_ns();
    if (!start)
      start = now;
    else if (now - start > GATE_WAIT_NS)
      return;
    sched_yield();
  }
}

int cg_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) {
  /* Counted first, the fork looked at after (as the prepare handler marks
   * first and counts after): one of the two sees the other. */
  __atomic_add_fetch(&walkers, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&forking, __ATOMIC_SEQ_CST)) {
    __atomic_sub_fetch(&walkers, 1, __ATOMIC_SEQ_CST);
    wait_for(&forking, 0);
    __atomic_add_fetch(&walkers, 1, __ATOMIC_SEQ_CST);
  }
  int r = dl_iterate_phdr(cb, data);
  __atomic_sub_fetch(&walkers, 1, __ATOMIC_SEQ_CST);
  return r;
}

void cg_loader_gate_atfork_prepare(void) {
  __atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
  wait_for(&walkers, 0);
}

void cg_loader_gate_atfork_parent(void) { __atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST); }

/* One thread now: the parent's other walkers never leave here. */
void cg_loader_gate_atfork_child(void) {
  walkers = 0;
  forking = 0;
}
