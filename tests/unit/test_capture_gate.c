/* The capture gate (shim/model/capture_gate.c), linked alone with the lock
 * rules (shim/base/locks.c): no shared holder is inside while a decision
 * holds it exclusive, and no decision while one is; a decision gets in while
 * shared holders keep coming (writer-preferring); a shared holder that found
 * a decision waits, asleep, and goes on once it is done; a hold of either
 * kind is a capguard lock region (cancellation off); the fork handlers leave
 * the child a free gate. */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture_gate.h"
#include "locks.h"
#include "check_run.h"

static int shared_inside, exclusive_inside, broken;
static bool stop_sharing;

static void *sharer(void *arg) {
  long *rounds = arg;
  while (!__atomic_load_n(&stop_sharing, __ATOMIC_ACQUIRE)) {
    cg_gate_share();
    __atomic_add_fetch(&shared_inside, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&exclusive_inside, __ATOMIC_SEQ_CST))
      __atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&shared_inside, 1, __ATOMIC_SEQ_CST);
    cg_gate_unshare();
    (*rounds)++;
  }
  return NULL;
}

static void *decider(void *arg) {
  int times = *(int *)arg;
  for (int i = 0; i < times; i++) {
    cg_gate_lock();
    if (__atomic_add_fetch(&exclusive_inside, 1, __ATOMIC_SEQ_CST) != 1)
      __atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
    for (int k = 0; k < 200; k++)
      if (__atomic_load_n(&shared_inside, __ATOMIC_SEQ_CST))
        __atomic_add_fetch(&broken, 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&exclusive_inside, 1, __ATOMIC_SEQ_CST);
    cg_gate_unlock();
  }
  return NULL;
}

START_TEST(test_exclusion_and_no_starvation) {
  enum { SHARERS = 8, DECIDERS = 2 };
  int times = 2000;
  long rounds[SHARERS] = {0};
  pthread_t s[SHARERS], d[DECIDERS];
  for (int i = 0; i < SHARERS; i++)
    ck_assert_int_eq(pthread_create(&s[i], NULL, sharer, &rounds[i]), 0);
  /* The sharers never stop until both deciders are done: a gate that let
   * the stream of shared holds starve a decision hangs here (the test's
   * timeout). */
  for (int i = 0; i < DECIDERS; i++)
    ck_assert_int_eq(pthread_create(&d[i], NULL, decider, &times), 0);
  for (int i = 0; i < DECIDERS; i++)
    pthread_join(d[i], NULL);
  __atomic_store_n(&stop_sharing, true, __ATOMIC_RELEASE);
  long total = 0;
  for (int i = 0; i < SHARERS; i++) {
    pthread_join(s[i], NULL);
    total += rounds[i];
  }
  ck_assert_int_eq(broken, 0);
  ck_assert_int_gt(total, 0);
}
END_TEST

static bool entered;
static void *late_sharer(void *arg) {
  (void)arg;
  cg_gate_share();
  __atomic_store_n(&entered, true, __ATOMIC_SEQ_CST);
  cg_gate_unshare();
  return NULL;
}

START_TEST(test_sharer_waits_for_a_decision) {
  cg_gate_lock();
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, late_sharer, NULL), 0);
  struct timespec ts = {0, 50 * 1000000L};
  nanosleep(&ts, NULL);
  ck_assert(!__atomic_load_n(&entered, __ATOMIC_SEQ_CST)); /* held back while the decision lasts */
  cg_gate_unlock();
  pthread_join(t, NULL); /* woken: the test's timeout catches a sharer left asleep */
  ck_assert(__atomic_load_n(&entered, __ATOMIC_SEQ_CST));
}
END_TEST

static int cancel_state(void) {
  int was, ignored;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &was);
  pthread_setcancelstate(was, &ignored);
  return was;
}

START_TEST(test_holds_are_lock_regions) {
  ck_assert_int_eq(cancel_state(), PTHREAD_CANCEL_ENABLE);
  cg_gate_share();
  ck_assert_int_eq(cancel_state(), PTHREAD_CANCEL_DISABLE);
  cg_gate_unshare();
  ck_assert_int_eq(cancel_state(), PTHREAD_CANCEL_ENABLE);
  cg_gate_lock();
  ck_assert_int_eq(cancel_state(), PTHREAD_CANCEL_DISABLE);
  cg_gate_unlock();
  ck_assert_int_eq(cancel_state(), PTHREAD_CANCEL_ENABLE);
  ck_assert_int_eq(cg_locks_held, 0);
}
END_TEST

static void *hold_shared_forever(void *arg) {
  (void)arg;
  cg_gate_share(); /* never let go: the child must not inherit it */
  for (;;)
    pause();
  return NULL;
}

START_TEST(test_fork_leaves_the_child_a_free_gate) {
  pthread_t t;
  cg_gate_share(); /* a shared hold of this thread's, let go before the fork */
  cg_gate_unshare();
  ck_assert_int_eq(pthread_create(&t, NULL, hold_shared_forever, NULL), 0);
  struct timespec ts = {0, 20 * 1000000L};
  nanosleep(&ts, NULL);
  /* The parent's handler waits for shared holders: this one never leaves,
   * so the fork is made as a decision would see the gate, by hand. */
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    cg_gate_atfork_child();
    cg_locks_atfork_child();
    cg_gate_lock(); /* the parent's thread is gone: its hold with it */
    cg_gate_unlock();
    cg_gate_share();
    cg_gate_unshare();
    _exit(cg_locks_held == 0 ? 0 : 3);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("capture_gate");
  TCase *tc = tcase_create("gate");
  tcase_set_timeout(tc, 20); /* a sharer left asleep hangs: fail, not wait */
  tcase_add_test(tc, test_exclusion_and_no_starvation);
  tcase_add_test(tc, test_sharer_waits_for_a_decision);
  tcase_add_test(tc, test_holds_are_lock_regions);
  tcase_add_test(tc, test_fork_leaves_the_child_a_free_gate);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
