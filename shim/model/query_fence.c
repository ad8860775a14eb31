#include "query_fence.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capguard/clock.h"
#include "warn.h"

/* More threads than this query events at once only in a process that holds
 * them all alive at once; the rest share one counter (an atomic add each). */
#define SLOTS 1024
static cg_query_slot slots[CG_FENCES][SLOTS];
static unsigned slots_used[CG_FENCES]; /* high-water mark: slots [0, slots_used) were ever taken */
static unsigned overflow_in_flight[CG_FENCES];
static bool membarrier_ok;
static pthread_key_t slot_key[CG_FENCES];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_ok;

__thread cg_query_slot *cg_fence_self[CG_FENCES] __attribute__((tls_model("initial-exec")));

/* A thread's slot is given back when it exits. */
static void release(void *p) {
  cg_query_slot *s = p;
  __atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
}
static void make_keys(void) {
  key_ok = pthread_key_create(&slot_key[0], release) == 0 && pthread_key_create(&slot_key[1], release) == 0;
}

cg_query_slot *cg_fence_slot_claim(int f) {
  pthread_once(&key_once, make_keys);
  if (!key_ok)
    return NULL;
  for (unsigned i = 0; i < SLOTS; i++) {
    int free_ = 0;
    cg_query_slot *s = &slots[f][i];
    if (__atomic_load_n(&s->taken, __ATOMIC_RELAXED) ||
        !__atomic_compare_exchange_n(&s->taken, &free_, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      continue;
    unsigned used = __atomic_load_n(&slots_used[f], __ATOMIC_RELAXED);
    while (used < i + 1 &&
           !__atomic_compare_exchange_n(&slots_used[f], &used, i + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
      ;
    if (pthread_setspecific(slot_key[f], s) != 0) {
      release(s);
      return NULL;
    }
    cg_fence_self[f] = s;
    return s;
  }
  return NULL;
}

void cg_fence_overflow_enter(int f) { __atomic_add_fetch(&overflow_in_flight[f], 1, __ATOMIC_SEQ_CST); }
void cg_fence_overflow_leave(int f) { __atomic_sub_fetch(&overflow_in_flight[f], 1, __ATOMIC_RELEASE); }

void cg_query_fence_init(void) {
  membarrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void cg_query_fence_atfork_child(void) {
  /* One thread now: the others' calls never leave. */
  for (int f = 0; f < CG_FENCES; f++) {
    for (unsigned i = 0; i < SLOTS; i++)
      if (&slots[f][i] != cg_fence_self[f]) {
        slots[f][i].taken = 0;
        slots[f][i].seq = 0;
      }
    if (cg_fence_self[f])
      cg_fence_self[f]->seq &= ~1u;
    overflow_in_flight[f] = 0;
  }
}

bool cg_fence_busy(int f) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  unsigned n = __atomic_load_n(&slots_used[f], __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    if (&slots[f][i] != cg_fence_self[f] && (__atomic_load_n(&slots[f][i].seq, __ATOMIC_ACQUIRE) & 1))
      return true;
  return __atomic_load_n(&overflow_in_flight[f], __ATOMIC_ACQUIRE) != 0;
}

static void pause_briefly(unsigned spins) {
  if (spins < 64) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}

/* Whether a thread other than the caller holds a slot of fence f. A thread
 * claims its slot with a locked compare-and-swap before its first plain
 * store to it, and the waiter has made its own change (the begin's count)
 * with a locked add and a full fence before it looks: so a thread whose
 * claim the waiter does not see reads the waiter's change after its claim,
 * and cannot have looked before it. Threads past the last slot use a locked
 * add as well. Only the plain stores of slots already held need membarrier. */
static bool others_hold_slots(int f) {
  unsigned n = __atomic_load_n(&slots_used[f], __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    if (&slots[f][i] != cg_fence_self[f] && __atomic_load_n(&slots[f][i].taken, __ATOMIC_ACQUIRE))
      return true;
  return false;
}

void cg_fence_wait(int f, bool asymmetric, unsigned long long limit_ns) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  /* membarrier interrupts every CPU running one of this process's threads:
   * on the H100's host a torch process's capture paid for it in each begin.
   * A process whose only querying thread is the capturing one
   * (torch's caching allocator on the main thread) never needs it. */
  if (asymmetric && others_hold_slots(f)) {
    if (!membarrier_ok || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
      /* No membarrier: a plain store leaves a store buffer within a
       * microsecond, and at any context switch. */
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
  }
  uint64_t start = cg_monotonic_ns();
  bool late = false;
  unsigned n = __atomic_load_n(&slots_used[f], __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n && !late; i++) {
    cg_query_slot *s = &slots[f][i];
    unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (!(seq & 1) || s == cg_fence_self[f])
      continue;
    for (unsigned spins = 0; __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == seq; spins++) {
      if (cg_monotonic_ns() - start > limit_ns) {
        late = true;
        break;
      }
      pause_briefly(spins);
    }
  }
  for (unsigned spins = 0; !late && __atomic_load_n(&overflow_in_flight[f], __ATOMIC_ACQUIRE); spins++) {
    if (cg_monotonic_ns() - start > limit_ns)
      late = true;
    pause_briefly(spins);
  }
  static int warned;
  if (late && f == CG_FENCE_QUERIES && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    cg_warn("an event query stayed in the driver for more than 1 s while a capture began or recorded an "
            "event; capguard stopped waiting for it (said once)");
}
