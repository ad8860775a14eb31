/* capguard's own locks, taken through these calls only, for two promises to
 * the host:
 *
 * - No capguard lock is held across a cancellation point with cancellation
 *   enabled. A lock is held across open, flock, pwrite, a warning's write
 *   or a driver call (which may read files); a thread the host cancels
 *   there would unwind with the lock still held, and the next thread to want
 *   it would hang for good. So a thread holding any capguard lock has
 *   cancellation disabled (pthread_setcancelstate, its own state, restored
 *   when it lets go of its last one): a cancel the host sent meanwhile is
 *   acted on at the thread's next cancellation point outside capguard.
 * - At exit nothing blocks on a lock: exit() may be called from a signal
 *   handler that interrupted this very thread inside capguard, holding the
 *   lock the exit path wants. cg_exit_lock waits at most until a deadline
 *   set once when capguard's exit begins, and otherwise says in one line
 *   what is skipped. */
#ifndef CAPGUARD_LOCKS_H
#define CAPGUARD_LOCKS_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

/* A moment's wait in a spin loop (the shard locks, the capture gate). */
static inline void cg_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

/* Locks this thread holds (locks.c's), read and written only by the calls
 * below. They are inline: a capture takes about eight locks, and a call to
 * each (and a return, a frame for the unlocks) was a tenth of what the lock
 * rules added to a capture (docs/benchmarks.md). */
extern __thread int cg_locks_held __attribute__((tls_model("initial-exec")));
/* The thread's cancel state from before its outermost hold (locks.c). */
extern __thread int cg_locks_cancel_before __attribute__((tls_model("initial-exec")));
/* The outermost hold and let-go: cancellation off, and back as it was,
 * inline (a call to a function of ours around each was a fifth of what
 * switching the state cost a capture). */
static inline void cg_locks_cancel_off(void) {
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cg_locks_cancel_before);
}
static inline void cg_locks_cancel_restore(void) {
  int ignored;
  pthread_setcancelstate(cg_locks_cancel_before, &ignored);
}

/* The cancellation part of cg_lock alone, for cg_exit_lock and for a span
 * that takes several locks one after another (a capture's begin, guard.c):
 * one hold around them makes them one region, so the cancel state is
 * switched once (pthread_setcancelstate, twice a region) instead of once a
 * lock. Every hold is paired with a let-go. */
static inline void cg_lock_hold(void) {
  if (cg_locks_held++ == 0)
    cg_locks_cancel_off();
}

static inline void cg_lock_let_go(void) {
  if (cg_locks_held > 0 && --cg_locks_held == 0)
    cg_locks_cancel_restore();
}

static inline void cg_lock(pthread_mutex_t *m) {
  cg_lock_hold();
  pthread_mutex_lock(m);
}

/* 0 when taken, as pthread_mutex_trylock. */
static inline int cg_trylock(pthread_mutex_t *m) {
  cg_lock_hold();
  int rc = pthread_mutex_trylock(m);
  if (rc)
    cg_lock_let_go();
  return rc;
}

static inline void cg_unlock(pthread_mutex_t *m) {
  pthread_mutex_unlock(m);
  cg_lock_let_go();
}

static inline void cg_rdlock(pthread_rwlock_t *l) {
  cg_lock_hold();
  pthread_rwlock_rdlock(l);
}

static inline void cg_wrlock(pthread_rwlock_t *l) {
  cg_lock_hold();
  pthread_rwlock_wrlock(l);
}

static inline void cg_rwunlock(pthread_rwlock_t *l) {
  pthread_rwlock_unlock(l);
  cg_lock_let_go();
}

/* A forked child's thread holds none of the parent's locks. */
void cg_locks_atfork_child(void);

/* capguard's exit has begun (its destructor): the deadline for every
 * cg_exit_lock is set from now. */
void cg_exit_begin(void);
bool cg_exiting(void);
const struct timespec *cg_exit_deadline(void); /* CLOCK_REALTIME */
/* m, taken before the exit's deadline, or false: then one line says that
 * what is skipped. Released with cg_unlock. */
bool cg_exit_lock(pthread_mutex_t *m, const char *what);
void cg_exit_lock_skipped(const char *what); /* the line cg_exit_lock says when it gives up */

/* m, as cg_lock; once capguard's exit has begun, as cg_exit_lock (taken
 * before the deadline, or false with one line saying what is skipped). */
static inline bool cg_lock_or_exit_lock(pthread_mutex_t *m, const char *what) {
  if (cg_exiting())
    return cg_exit_lock(m, what);
  cg_lock(m);
  return true;
}
/* m, as cg_lock; once the exit has begun only when free (no wait, nothing
 * said): for caches whose caller can do without them. */
static inline bool cg_lock_or_skip_at_exit(pthread_mutex_t *m) {
  if (cg_exiting())
    return cg_trylock(m) == 0;
  cg_lock(m);
  return true;
}

#endif
