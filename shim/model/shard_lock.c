/* The shard locks' waits (shard_lock.h). */
#include "shard_lock.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "locks.h"
#include "warn.h"

/* As glibc's adaptive mutex: the holder is mostly a few hundred
 * instructions from letting go, sooner than a sleep and a wake. */
enum { SPINS = 100 };

static bool try_free(cg_shard_lock *l) {
  unsigned free_ = 0;
  return __atomic_load_n(&l->word, __ATOMIC_RELAXED) == 0 &&
         __atomic_compare_exchange_n(&l->word, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

void cg_shard_lock_wait(cg_shard_lock *l) {
  for (int i = 0; i < SPINS; i++) {
    if (try_free(l))
      return;
    cg_cpu_relax();
  }
  /* Marked as waited for (2) by whoever takes it from here: its release
   * then wakes one sleeper. The kernel compares the word with 2 before it
   * sleeps: a release between the exchange and the wait returns at once. */
  while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0)
    syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2u, NULL, NULL, 0);
}

void cg_shard_lock_wake(cg_shard_lock *l) {
  syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

bool cg_shard_lock_at_exit(cg_shard_lock *l, const char *what) {
  cg_lock_hold();
  if (try_free(l))
    return true;
  /* the exit's deadline is on CLOCK_REALTIME, as pthread_mutex_timedlock's */
  while (__atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE) != 0) {
    if (syscall(SYS_futex, &l->word, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 2u, cg_exit_deadline(),
                NULL, FUTEX_BITSET_MATCH_ANY) != 0 &&
        errno == ETIMEDOUT) {
      cg_lock_let_go();
      cg_exit_lock_skipped(what);
      return false;
    }
  }
  return true;
}
