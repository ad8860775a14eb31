/* capguard's exit never blocks on a lock (locks.h). */
#include "locks.h"

#include <errno.h>

#include "warn.h"

bool cg_exit_lock(pthread_mutex_t *m, const char *what) {
  cg_lock_hold();
  int rc;
  while ((rc = pthread_mutex_timedlock(m, cg_exit_deadline())) == EINTR) {
  }
  if (rc == 0)
    return true;
  cg_lock_let_go();
  cg_warn("at exit: %s skipped: a lock it needs is still held (exit() called from a signal handler "
          "that interrupted capguard, or a thread stopped inside it)", what);
  return false;
}

