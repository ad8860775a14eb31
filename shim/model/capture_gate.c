/* The capture gate: a reader-writer lock whose readers count themselves on
 * lines of their own (capture_gate.h). */
#include "capture_gate.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "locks.h"

#define OWN_LINE __attribute__((aligned(64)))
enum { GATE_SHARDS = 32 };

/* Shared holders, one count a shard of threads. */
static struct {
  unsigned n;
} OWN_LINE sharers[GATE_SHARDS];
/* wanted: 1 while a decision holds the gate or waits for the shared holders
 * to leave (a futex word: shared holders that found it set sleep on it);
 * sleepers: how many do, so that a decision's release makes a system call
 * only when someone sleeps. */
static struct {
  unsigned wanted, sleepers;
} OWN_LINE exclusive;
/* One decision at a time; the others sleep here. */
static pthread_mutex_t deciders = PTHREAD_MUTEX_INITIALIZER;

static __thread unsigned own_shard __attribute__((tls_model("initial-exec"))); /* + 1; 0: not yet picked */

/* Threads are given shards in turn as they first hold the gate: 64 threads
 * two a shard. */
static unsigned shards_given;
static unsigned *own_count(void) {
  if (__builtin_expect(!own_shard, 0))
    own_shard = __atomic_fetch_add(&shards_given, 1, __ATOMIC_RELAXED) % GATE_SHARDS + 1;
  return &sharers[own_shard - 1].n;
}

static void sleep_while_wanted(void) {
  __atomic_add_fetch(&exclusive.sleepers, 1, __ATOMIC_SEQ_CST);
  /* The kernel compares wanted with 1 before it sleeps: a release between
   * the load and the wait makes the wait return at once. */
  while (__atomic_load_n(&exclusive.wanted, __ATOMIC_SEQ_CST))
    syscall(SYS_futex, &exclusive.wanted, FUTEX_WAIT_PRIVATE, 1u, NULL, NULL, 0);
  __atomic_sub_fetch(&exclusive.sleepers, 1, __ATOMIC_SEQ_CST);
}

void cg_gate_share(void) {
  cg_lock_hold();
  unsigned *n = own_count();
  for (;;) {
    /* Counted, then the flag read; a decision sets the flag, then reads
     * every count: both sequentially consistent, so at least one of the
     * two sees the other, and never both go on. */
    __atomic_add_fetch(n, 1, __ATOMIC_SEQ_CST);
    if (__builtin_expect(!__atomic_load_n(&exclusive.wanted, __ATOMIC_SEQ_CST), 1))
      return;
    /* A decision wants the gate: stand back until it is done. */
    __atomic_sub_fetch(n, 1, __ATOMIC_RELEASE);
    sleep_while_wanted();
  }
}

void cg_gate_unshare(void) {
  __atomic_sub_fetch(own_count(), 1, __ATOMIC_RELEASE);
  cg_lock_let_go();
}

static bool any_sharer(void) {
  for (unsigned i = 0; i < GATE_SHARDS; i++)
    if (__atomic_load_n(&sharers[i].n, __ATOMIC_SEQ_CST))
      return true;
  return false;
}

void cg_gate_lock(void) {
  cg_lock(&deciders);
  __atomic_store_n(&exclusive.wanted, 1, __ATOMIC_SEQ_CST);
  /* Shared holders are inside a driver's begin or end: a few microseconds,
   * mostly. Spin, then yield, then sleep in short steps. */
  for (unsigned spins = 0; any_sharer(); spins++) {
    if (spins < 64) {
      cg_cpu_relax();
    } else if (spins < 128) {
      sched_yield();
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
}

void cg_gate_unlock(void) {
  __atomic_store_n(&exclusive.wanted, 0, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&exclusive.sleepers, __ATOMIC_SEQ_CST))
    syscall(SYS_futex, &exclusive.wanted, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
  cg_unlock(&deciders);
}

void cg_gate_atfork_prepare(void) { cg_gate_lock(); }
void cg_gate_atfork_parent(void) { cg_gate_unlock(); }
void cg_gate_atfork_child(void) {
  /* The child's only thread held it exclusive; nobody else is left. */
  for (unsigned i = 0; i < GATE_SHARDS; i++)
    sharers[i].n = 0;
  exclusive.wanted = exclusive.sleepers = 0;
  deciders = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}
