/* The capture model's shard locks (live_captures.c): a word and a futex.
 * Every capture takes its stream's shard's lock twice, at its begin and at
 * its end, for a few hundred instructions; glibc's adaptive mutex cost
 * about 30 instructions to take and 30 to let go even when free. Taken
 * here, a free lock is one compare-and-swap and let go with one exchange.
 * A waiter spins a moment, then sleeps in the kernel: the mutex of
 * "Futexes Are Tricky" (Drepper), with glibc's adaptive spin before it.
 * Each is a capguard lock (locks.h): cancellation off while held, and at
 * exit only waited for until the exit's deadline. */
#ifndef CAPGUARD_SHARD_LOCK_H
#define CAPGUARD_SHARD_LOCK_H

#include <stdbool.h>

#include "locks.h"

/* 0: free; 1: held; 2: held, and a waiter may sleep on it. */
typedef struct {
  unsigned word;
} cg_shard_lock;
#define CG_SHARD_LOCK_INIT \
  { 0 }

void cg_shard_lock_wait(cg_shard_lock *l); /* taken, after a wait */
void cg_shard_lock_wake(cg_shard_lock *l); /* one sleeper woken */

static inline void cg_shard_lock_take(cg_shard_lock *l) {
  cg_lock_hold();
  unsigned free_ = 0;
  if (__builtin_expect(
          !__atomic_compare_exchange_n(&l->word, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 0))
    cg_shard_lock_wait(l);
}

static inline void cg_shard_lock_give(cg_shard_lock *l) {
  if (__builtin_expect(__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2, 0))
    cg_shard_lock_wake(l);
  cg_lock_let_go();
}

/* At exit (cg_exit_lock's rule): taken before the exit's deadline, or false
 * with one line saying what is skipped. Let go with cg_shard_lock_give. */
bool cg_shard_lock_at_exit(cg_shard_lock *l, const char *what);

#endif
