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
static int parking; /* a begin is parking slots: one at a time */
#if CG_QUERY_PARKS
/* The fast path's target and its divert (route/fast_path.h), given at the
 * first use of the driver; until then nothing is put back (the target is
 * the divert from the start) and a begin only waits. */
static void **query_target;
static void *query_divert;
static unsigned query_restores; /* targets put back, ever */
#endif

__thread cg_query_slot *cg_fence_self[CG_FENCES] __attribute__((tls_model("initial-exec")));
__thread unsigned cg_query_seq __attribute__((tls_model("initial-exec"))) = CG_QUERY_UNCLAIMED;
__thread unsigned cg_breaker_seq __attribute__((tls_model("initial-exec"))) = CG_QUERY_UNCLAIMED;
/* Each fence's word of the calling thread. */
static unsigned *own_word(int f) { return f == CG_FENCE_QUERIES ? &cg_query_seq : &cg_breaker_seq; }

/* A thread's slot is given back when it exits (a key's destructor: before
 * its thread-locals are freed). A waiter reading its word is waited
 * for: it counted itself in readers (a locked add) before it loaded
 * tls_seq, and this clears tls_seq (a locked exchange) before it looks at
 * readers, so either the waiter sees NULL or this sees the waiter. */
static void release(void *p) {
  cg_query_slot *s = p;
  unsigned *mine = __atomic_exchange_n(&s->tls_seq, NULL, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&s->readers, __ATOMIC_SEQ_CST))
    sched_yield();
  /* Run by the exiting thread itself: a call it makes after this (another
   * key's destructor) claims a slot again rather than mark one no longer
   * its own. */
  if (mine == &cg_query_seq || mine == &cg_breaker_seq)
    *mine = CG_QUERY_UNCLAIMED;
  for (int f = 0; f < CG_FENCES; f++)
    if (cg_fence_self[f] == s)
      cg_fence_self[f] = NULL;
  /* A parking begin's later confirmation fails on it (park_idle_slots). */
  __atomic_store_n(&s->parked, CG_SLOT_ACTIVE, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->idle_seen, CG_QUERY_UNCLAIMED, __ATOMIC_RELAXED);
  __atomic_store_n(&s->taken, 0, __ATOMIC_RELEASE);
}

/* A slot's sequence number as its owner last wrote it (0 for a slot whose
 * owner is gone or not yet pointed at). */
static unsigned slot_seq(cg_query_slot *s) {
  __atomic_add_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
  unsigned *p = __atomic_load_n(&s->tls_seq, __ATOMIC_SEQ_CST);
  unsigned v = p ? __atomic_load_n(p, __ATOMIC_ACQUIRE) : 0;
  __atomic_sub_fetch(&s->readers, 1, __ATOMIC_RELEASE);
  return v;
}
/* The owner's word set from `from` to `to` if it is still `from`, read
 * through tls_seq under the readers count as slot_seq does (the owner may
 * be exiting). */
static bool slot_cas(cg_query_slot *s, unsigned from, unsigned to) {
  __atomic_add_fetch(&s->readers, 1, __ATOMIC_SEQ_CST);
  unsigned *p = __atomic_load_n(&s->tls_seq, __ATOMIC_SEQ_CST);
  bool ok = p && __atomic_compare_exchange_n(p, &from, to, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
  __atomic_sub_fetch(&s->readers, 1, __ATOMIC_RELEASE);
  return ok;
}
/* Whether a slot's call may be in flight, its word read as seq: odd, and
 * not a parked slot's CG_QUERY_UNCLAIMED. A word of CG_QUERY_UNCLAIMED in
 * a slot not (yet) marked parked counts as in flight: the parking begin
 * has not confirmed it, or the word wrapped round to it mid-query. */
static bool in_flight(int f, cg_query_slot *s, unsigned seq) {
  if (!(seq & 1))
    return false;
  return f != CG_FENCE_QUERIES || seq != CG_QUERY_UNCLAIMED ||
         __atomic_load_n(&s->parked, __ATOMIC_SEQ_CST) != CG_SLOT_PARKED;
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
    __atomic_store_n(&s->parked, CG_SLOT_ACTIVE, __ATOMIC_SEQ_CST);
    __atomic_store_n(&s->idle_seen, CG_QUERY_UNCLAIMED, __ATOMIC_RELAXED);
    __atomic_store_n(own_word(f), 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->tls_seq, own_word(f), __ATOMIC_RELEASE);
    cg_fence_self[f] = s;
    return s;
  }
  return NULL;
}

bool cg_query_claim(void) { return cg_fence_slot_claim(CG_FENCE_QUERIES) != NULL; }

/* The owner's side of parking. The increment that brought the thread here
 * made its word 0. With a slot, the slot was parked (or being parked): the
 * word back to an even 0, then `parked` cleared with a locked exchange (a
 * full fence) before the enter's increment, and the caller reads the
 * capture activity only after: so a begin that read `parked` as set before
 * this exchange has its own change seen by this query (query_fence_wait's
 * first step). The word set before the exchange: a slot cleared is never
 * left with the word CG_QUERY_UNCLAIMED, which waiters count as in flight.
 * A begin may park the word again between the exchange and the increment:
 * the increment gives 0 again, and this goes round once more. */
unsigned *cg_query_enter_unclaimed(void) {
  for (;;) {
    cg_query_slot *s = cg_fence_self[CG_FENCE_QUERIES];
    if (s) {
      __atomic_store_n(&cg_query_seq, 0, __ATOMIC_RELAXED);
      __atomic_exchange_n(&s->parked, CG_SLOT_ACTIVE, __ATOMIC_SEQ_CST);
      /* parked again only after two begins more */
      __atomic_store_n(&s->idle_seen, CG_QUERY_UNCLAIMED, __ATOMIC_RELAXED);
    } else {
      __atomic_store_n(&cg_query_seq, CG_QUERY_UNCLAIMED, __ATOMIC_RELAXED);
      if (!cg_query_claim()) {
        cg_fence_overflow_enter(CG_FENCE_QUERIES);
        return NULL;
      }
    }
#if CG_QUERY_PARKS
    bool was_unclaimed;
    __asm__ volatile("addl $1, %0" : "+m"(cg_query_seq), "=@ccz"(was_unclaimed)::"memory");
    if (!was_unclaimed)
      return &cg_query_seq;
#else
    __atomic_store_n(&cg_query_seq, cg_query_seq + 1, __ATOMIC_RELAXED);
    return &cg_query_seq;
#endif
  }
}

void cg_fence_overflow_enter(int f) { __atomic_add_fetch(&overflow_in_flight[f], 1, __ATOMIC_SEQ_CST); }
void cg_fence_overflow_leave(int f) { __atomic_sub_fetch(&overflow_in_flight[f], 1, __ATOMIC_RELEASE); }

void cg_query_fence_init(void **target, void *divert) {
  membarrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#if CG_QUERY_PARKS
  if (target && divert) {
    query_target = target;
    __atomic_store_n(&query_divert, divert, __ATOMIC_RELEASE);
  }
#else
  (void)target;
  (void)divert;
#endif
}

void cg_query_fence_atfork_child(void) {
  /* One thread now: the others' calls never leave. */
  for (int f = 0; f < CG_FENCES; f++) {
    for (unsigned i = 0; i < SLOTS; i++)
      if (&slots[f][i] != cg_fence_self[f]) {
        slots[f][i].taken = 0;
        slots[f][i].tls_seq = NULL;
        slots[f][i].readers = 0;
      }
    for (unsigned i = 0; i < SLOTS; i++) {
      slots[f][i].parked = CG_SLOT_ACTIVE;
      slots[f][i].idle_seen = CG_QUERY_UNCLAIMED;
    }
    if (f == CG_FENCE_BREAKERS && cg_fence_self[f])
      cg_breaker_seq &= ~1u;
    /* A parked word (or one a parent's begin was parking) is unparked: the
     * slot is no longer marked, and waiters count an unmarked
     * CG_QUERY_UNCLAIMED as in flight. */
    if (f == CG_FENCE_QUERIES && cg_fence_self[f])
      cg_query_seq = cg_query_seq == CG_QUERY_UNCLAIMED ? 0 : cg_query_seq & ~1u;
    overflow_in_flight[f] = 0;
  }
  parking = 0;
}

bool cg_fence_busy(int f) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  unsigned n = __atomic_load_n(&slots_used[f], __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    if (&slots[f][i] != cg_fence_self[f] && in_flight(f, &slots[f][i], slot_seq(&slots[f][i])))
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

/* Whether every slot of the queries' fence held by another thread is
 * parked, and no query counts in the shared counter. Read after the
 * begin's own change and a full fence: a parked querier clears `parked`
 * with a locked exchange before it reads the capture activity (Dekker):
 * this sees the flag cleared, or that query sees the begin. A parked slot
 * holds no query in flight (park_idle_slots), a slot claimed unseen here
 * reads the begin's change after its claim (others_hold_slots), so there
 * is nothing to make visible and nothing to wait for. */
static bool others_all_parked(void) {
  unsigned n = __atomic_load_n(&slots_used[CG_FENCE_QUERIES], __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++) {
    cg_query_slot *s = &slots[CG_FENCE_QUERIES][i];
    if (s != cg_fence_self[CG_FENCE_QUERIES] && __atomic_load_n(&s->taken, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&s->parked, __ATOMIC_SEQ_CST) != CG_SLOT_PARKED)
      return false;
  }
  return __atomic_load_n(&overflow_in_flight[CG_FENCE_QUERIES], __ATOMIC_SEQ_CST) == 0;
}

static bool make_visible(void) {
  return membarrier_ok && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* Parks the slots of other threads whose word is even and the same as at
 * the last begin's look (no query for a whole interval), after this begin
 * waited for the queries in flight; the caller holds `parking`, and
 * membarrier works (the second one below is what makes a park sure).
 * Each candidate: marked CG_SLOT_PARKING, its word set from v to
 * CG_QUERY_UNCLAIMED with a compare-and-swap. The owner's increment is one
 * instruction (`addl $1` in the fast path and in cg_query_enter) but not a
 * locked one: it may have read v before the swap and store v + 1 after it.
 * The membarrier that follows interrupts each running thread between two
 * instructions (a thread not running has passed a context switch): an
 * increment that read v has retired before it, and its store is seen by
 * the word's second read; one that comes after reads CG_QUERY_UNCLAIMED,
 * gives 0 and goes to cg_query_enter_unclaimed. So a second read still
 * CG_QUERY_UNCLAIMED means that no query of the owner is in flight and its
 * next one unparks first: the slot is marked parked (a compare-and-swap
 * from CG_SLOT_PARKING, which fails where the owner unparked meanwhile).
 * Otherwise the slot stays active, its word given back where it is still
 * CG_QUERY_UNCLAIMED (a claim reset the slot under the swap). v is never
 * 0xFFFFFFFE: an increment straddling the swap would store
 * CG_QUERY_UNCLAIMED itself. */
static void park_idle_slots(void) {
  static unsigned pending[SLOTS], pending_v[SLOTS]; /* under `parking` */
  unsigned k = 0, n = __atomic_load_n(&slots_used[CG_FENCE_QUERIES], __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++) {
    cg_query_slot *s = &slots[CG_FENCE_QUERIES][i];
    if (s == cg_fence_self[CG_FENCE_QUERIES] || !__atomic_load_n(&s->taken, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&s->parked, __ATOMIC_SEQ_CST) != CG_SLOT_ACTIVE)
      continue;
    unsigned v = slot_seq(s);
    unsigned seen = __atomic_exchange_n(&s->idle_seen, v, __ATOMIC_RELAXED);
    int active = CG_SLOT_ACTIVE;
    if ((v & 1) || v != seen || v == CG_QUERY_UNCLAIMED - 1 ||
        !__atomic_compare_exchange_n(&s->parked, &active, CG_SLOT_PARKING, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_RELAXED))
      continue;
    if (!slot_cas(s, v, CG_QUERY_UNCLAIMED)) {
      int parking_ = CG_SLOT_PARKING;
      __atomic_compare_exchange_n(&s->parked, &parking_, CG_SLOT_ACTIVE, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
      continue;
    }
    pending[k] = i;
    pending_v[k++] = v;
  }
  if (!k)
    return;
  bool sure = make_visible();
  for (unsigned j = 0; j < k; j++) {
    cg_query_slot *s = &slots[CG_FENCE_QUERIES][pending[j]];
    int parking_ = CG_SLOT_PARKING;
    if (sure && slot_seq(s) == CG_QUERY_UNCLAIMED &&
        __atomic_compare_exchange_n(&s->parked, &parking_, CG_SLOT_PARKED, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      continue;
    parking_ = CG_SLOT_PARKING;
    __atomic_compare_exchange_n(&s->parked, &parking_, CG_SLOT_ACTIVE, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
    slot_cas(s, CG_QUERY_UNCLAIMED, pending_v[j]);
  }
}

#if CG_QUERY_PARKS

void cg_query_restore_target(void *driver_fn) {
  void *divert = __atomic_load_n(&query_divert, __ATOMIC_ACQUIRE);
  /* The swap first, the count after: a begin that set the divert before
   * this swap read the count before it too, and sees it move. */
  if (divert && __atomic_compare_exchange_n(query_target, &divert, driver_fn, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED))
    __atomic_add_fetch(&query_restores, 1, __ATOMIC_SEQ_CST);
}

void cg_query_divert_and_wait(void) {
  void *divert = __atomic_load_n(&query_divert, __ATOMIC_ACQUIRE);
  /* Bounded: only queries that looked before this begin counted itself put
   * the target back, and each round waits for all of them to leave. */
  for (int round = 0; round < 16; round++) {
    unsigned seen = __atomic_load_n(&query_restores, __ATOMIC_SEQ_CST);
    if (divert)
      __atomic_store_n(query_target, divert, __ATOMIC_SEQ_CST);
    cg_query_fence_wait(true);
    if (__atomic_load_n(&query_restores, __ATOMIC_SEQ_CST) == seen)
      return;
  }
}
#endif

/* Whether limit_ns have passed since *start, set by the first call. */
static bool waited_past(uint64_t *start, unsigned long long limit_ns) {
  uint64_t now = cg_monotonic_ns();
  if (!*start)
    *start = now;
  return now - *start > limit_ns;
}

void cg_fence_wait(int f, bool asymmetric, unsigned long long limit_ns) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  bool park = false;
  if (asymmetric && f == CG_FENCE_QUERIES && CG_QUERY_PARKS) {
    if (others_all_parked())
      return;
    park = membarrier_ok;
  }
  /* membarrier interrupts every CPU running one of this process's threads:
   * on the H100's host a torch process's capture paid for it in each begin.
   * A process whose only querying thread is the capturing one
   * (torch's caching allocator on the main thread) never needs it. */
  if (asymmetric && others_hold_slots(f) && !make_visible()) {
    /* No membarrier: a plain store leaves a store buffer within a
     * microsecond, and at any context switch. */
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  uint64_t start = 0; /* the clock is read once there is something to wait for */
  bool late = false;
  unsigned n = __atomic_load_n(&slots_used[f], __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n && !late; i++) {
    cg_query_slot *s = &slots[f][i];
    unsigned seq = slot_seq(s);
    if (s == cg_fence_self[f] || !in_flight(f, s, seq))
      continue;
    for (unsigned spins = 0; slot_seq(s) == seq && in_flight(f, s, seq); spins++) {
      if (waited_past(&start, limit_ns)) {
        late = true;
        break;
      }
      pause_briefly(spins);
    }
  }
  for (unsigned spins = 0; !late && __atomic_load_n(&overflow_in_flight[f], __ATOMIC_ACQUIRE); spins++) {
    if (waited_past(&start, limit_ns))
      late = true;
    pause_briefly(spins);
  }
  /* Taken here, not before the wait: the wait's pauses are cancellation
   * points, and a begin cancelled there must not leave `parking` held. */
  if (park && !__atomic_exchange_n(&parking, 1, __ATOMIC_ACQUIRE)) {
    park_idle_slots();
    __atomic_store_n(&parking, 0, __ATOMIC_RELEASE);
  }
  static int warned;
  if (late && f == CG_FENCE_QUERIES && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
    cg_warn("an event query stayed in the driver for more than 1 s while a capture began or recorded an "
            "event; capguard stopped waiting for it (said once)");
}
