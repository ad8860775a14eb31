/* The queries' fence's parked slots (shim/model/query_fence.c), driven
 * directly: a thread that queried and then stays idle is parked by the
 * second begin after its last query, its next query unparks it; a word
 * of 0xFFFFFFFE is never parked, and the in-flight word it becomes
 * (CG_QUERY_UNCLAIMED's value, odd) is seen as in flight. And the
 * diverted target: put back only from the divert, and a begin whose wait
 * saw a query put it back sets the divert again. The querier is a thread
 * of this test that enters and leaves when told to. */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>

#include "query_fence.h"
#include "warn.h"
#include "check_run.h"

/* The target and its divert stand in for route/fast_path.h's; never called here. */
static void test_divert(void) {}
static void *target = (void *)test_divert;
static void driver_query(void) {}
static void test_divert_other(void) {}

void cg_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

/* The querier: each step asked of it is one of these. */
enum { STEP_NONE, STEP_QUERY, STEP_ENTER, STEP_LEAVE, STEP_SET_WORD, STEP_RESTORE, STEP_EXIT };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int step, done_steps, asked_steps;
static unsigned set_to;
static unsigned *word;        /* the querier's cg_query_seq */
static cg_query_slot *slot;   /* its slot */
static unsigned *in_flight_q; /* what its enter returned */

static void *querier(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    while (done_steps == asked_steps)
      pthread_cond_wait(&cv, &mu);
    int s = step;
    if (s == STEP_QUERY || s == STEP_ENTER) {
      in_flight_q = cg_query_enter();
      if (s == STEP_QUERY)
        cg_query_leave(in_flight_q);
    } else if (s == STEP_LEAVE) {
      cg_query_leave(in_flight_q);
    } else if (s == STEP_SET_WORD) {
      cg_query_seq = set_to;
    } else if (s == STEP_RESTORE) {
      cg_query_restore_target((void *)driver_query);
    }
    word = &cg_query_seq;
    slot = cg_fence_self[CG_FENCE_QUERIES];
    done_steps++;
    pthread_cond_broadcast(&cv);
    if (s == STEP_EXIT)
      break;
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void ask(int s) {
  pthread_mutex_lock(&mu);
  step = s;
  asked_steps++;
  pthread_cond_broadcast(&cv);
  while (done_steps != asked_steps)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static unsigned word_now(void) { return __atomic_load_n(word, __ATOMIC_SEQ_CST); }
static int parked_now(void) { return __atomic_load_n(&slot->parked, __ATOMIC_SEQ_CST); }
static void begin(void) { cg_fence_wait(CG_FENCE_QUERIES, true, 1000000000ull); }

static pthread_t start_querier(void) {
  pthread_t t;
  step = STEP_NONE;
  done_steps = asked_steps = 0;
  ck_assert_int_eq(pthread_create(&t, NULL, querier, NULL), 0);
  return t;
}
static void stop_querier(pthread_t t) {
  ask(STEP_EXIT);
  pthread_join(t, NULL);
}

START_TEST(test_idle_querier_parked_and_unparked) {
  cg_query_fence_init(&target, (void *)test_divert);
  pthread_t t = start_querier();
  for (int i = 0; i < 3; i++)
    ask(STEP_QUERY);
  ck_assert_ptr_nonnull(slot);
  ck_assert_uint_eq(word_now(), 6);
  begin(); /* notes the word */
  ck_assert_uint_eq(word_now(), 6);
  ck_assert_int_eq(parked_now(), CG_SLOT_ACTIVE);
  begin(); /* the same word: parked */
  ck_assert_uint_eq(word_now(), CG_QUERY_UNCLAIMED);
  ck_assert_int_eq(parked_now(), CG_SLOT_PARKED);
  ck_assert(!cg_fence_busy(CG_FENCE_QUERIES)); /* a parked word is not in flight */
  begin();
  ck_assert_int_eq(parked_now(), CG_SLOT_PARKED);
  /* its next query unparks it, and is in flight as any other */
  ask(STEP_ENTER);
  ck_assert_ptr_eq(in_flight_q, word);
  ck_assert_uint_eq(word_now(), 1);
  ck_assert_int_eq(parked_now(), CG_SLOT_ACTIVE);
  ck_assert(cg_fence_busy(CG_FENCE_QUERIES));
  ask(STEP_LEAVE);
  ck_assert_uint_eq(word_now(), 2);
  /* an interval with a query between two begins: not parked */
  begin();
  ask(STEP_QUERY);
  begin();
  ck_assert_uint_eq(word_now(), 4);
  ck_assert_int_eq(parked_now(), CG_SLOT_ACTIVE);
  stop_querier(t);
}
END_TEST

START_TEST(test_the_word_before_wrapping_is_never_parked) {
  cg_query_fence_init(&target, (void *)test_divert);
  pthread_t t = start_querier();
  ask(STEP_QUERY);
  set_to = CG_QUERY_UNCLAIMED - 1;
  ask(STEP_SET_WORD);
  for (int i = 0; i < 3; i++)
    begin();
  ck_assert_uint_eq(word_now(), CG_QUERY_UNCLAIMED - 1);
  ck_assert_int_eq(parked_now(), CG_SLOT_ACTIVE);
  /* entered, the word is CG_QUERY_UNCLAIMED's value: in flight all the same */
  ask(STEP_ENTER);
  ck_assert_ptr_eq(in_flight_q, word);
  ck_assert_uint_eq(word_now(), CG_QUERY_UNCLAIMED);
  ck_assert(cg_fence_busy(CG_FENCE_QUERIES));
  ask(STEP_LEAVE);
  ck_assert_uint_eq(word_now(), 0);
  ck_assert(!cg_fence_busy(CG_FENCE_QUERIES));
  stop_querier(t);
}
END_TEST

#if CG_QUERY_PARKS
static void *target_now(void) { return __atomic_load_n(&target, __ATOMIC_SEQ_CST); }

START_TEST(test_target_put_back_only_from_the_divert) {
  cg_query_fence_init(&target, (void *)test_divert);
  ck_assert_ptr_eq(target_now(), (void *)test_divert); /* the first query finds the driver */
  cg_query_restore_target((void *)driver_query);
  ck_assert_ptr_eq(target_now(), (void *)driver_query);
  cg_query_restore_target((void *)test_divert_other);
  ck_assert_ptr_eq(target_now(), (void *)driver_query); /* not the divert: left alone */
  cg_query_divert_and_wait();
  ck_assert_ptr_eq(target_now(), (void *)test_divert);
}
END_TEST

static int begin_done;
static void *diverting_begin(void *arg) {
  (void)arg;
  cg_query_divert_and_wait();
  __atomic_store_n(&begin_done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* A query in flight that saw nothing capturing (it looked before the
 * begin counted itself) puts the driver's function back while the begin
 * waits for it: the begin sets the divert again before it goes on. */
START_TEST(test_begin_diverts_again_after_a_query_put_the_target_back) {
  cg_query_fence_init(&target, (void *)test_divert);
  cg_query_restore_target((void *)driver_query);
  pthread_t t = start_querier();
  ask(STEP_ENTER);
  pthread_t b;
  ck_assert_int_eq(pthread_create(&b, NULL, diverting_begin, NULL), 0);
  while (target_now() != (void *)test_divert)
    sched_yield();
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL);
  ck_assert_int_eq(__atomic_load_n(&begin_done, __ATOMIC_SEQ_CST), 0); /* waits for the query */
  ask(STEP_RESTORE);
  ck_assert_ptr_eq(target_now(), (void *)driver_query);
  ask(STEP_LEAVE);
  pthread_join(b, NULL);
  ck_assert_ptr_eq(target_now(), (void *)test_divert);
  stop_querier(t);
}
END_TEST
#endif

int main(void) {
  Suite *s = suite_create("query_fence");
  TCase *tc = tcase_create("parking");
  tcase_add_test(tc, test_idle_querier_parked_and_unparked);
  tcase_add_test(tc, test_the_word_before_wrapping_is_never_parked);
#if CG_QUERY_PARKS
  tcase_add_test(tc, test_target_put_back_only_from_the_divert);
  tcase_add_test(tc, test_begin_diverts_again_after_a_query_put_the_target_back);
#endif
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
