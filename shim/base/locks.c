/* capguard's lock calls (locks.h): cancellation off while a thread holds any
 * capguard lock; capguard's exit, which never blocks on a lock: it waits
 * for one until a deadline. */
#include "locks.h"

#include <errno.h>
#include <time.h>

#include "warn.h"


/* Locks this thread holds (locks.h's inline calls), and its cancel state
 * from before the first. */
__thread int cg_locks_held __attribute__((tls_model("initial-exec")));
__thread int cg_locks_cancel_before __attribute__((tls_model("initial-exec")));

/* How long capguard's exit waits, all its locks together, for locks that
 * other threads hold for a moment. A lock held by the code a signal handler
 * interrupted is never let go: past this, what needs it is skipped. */
#define EXIT_WAIT_MS 1000

static int exiting;
static struct timespec exit_deadline; /* CLOCK_REALTIME, as pthread_mutex_timedlock wants */

void cg_exit_begin(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += (long)EXIT_WAIT_MS * 1000000L;
  t.tv_sec += t.tv_nsec / 1000000000L;
  t.tv_nsec %= 1000000000L;
  exit_deadline = t;
  __atomic_store_n(&exiting, 1, __ATOMIC_RELEASE);
}

bool cg_exiting(void) { return __atomic_load_n(&exiting, __ATOMIC_ACQUIRE); }

const struct timespec *cg_exit_deadline(void) { return &exit_deadline; }

bool cg_exit_lock(pthread_mutex_t *m, const char *what) {
  cg_lock_hold();
  int rc;
  while ((rc = pthread_mutex_timedlock(m, &exit_deadline)) == EINTR) {
  }
  if (rc == 0)
    return true;
  cg_lock_let_go();
  cg_exit_lock_skipped(what);
  return false;
}

void cg_exit_lock_skipped(const char *what) {
  cg_warn("at exit: %s skipped: a lock it needs is still held (exit() called from a signal handler "
          "that interrupted capguard, or a thread stopped inside it)", what);
}

void cg_locks_atfork_child(void) {
  /* fork() is the host's call, made outside capguard's locks: nothing to
   * let go, but a child forked from inside (never, today) starts clean. */
  if (cg_locks_held) {
    cg_locks_held = 0;
    int ignored;
    pthread_setcancelstate(cg_locks_cancel_before, &ignored);
  }
}
