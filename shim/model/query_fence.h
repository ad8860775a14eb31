/* The fence between event queries and captures (docs/reliability.md, attack 1). In guard
 * mode no query of an event in an open capture may reach the driver (it
 * answers 907 and breaks the capture, whatever the thread or mode), however
 * the query interleaves with the capture's begin and the event's record.
 * Every cuEventQuery says, in a word of its thread's own (cg_query_seq, a
 * thread-local the thread's slot points at), that it is in flight (a
 * sequence number, odd while in flight: two plain increments, no atomic
 * read-modify-write; the x86-64 wrapper is 9 instructions,
 * route/fast_path.h); a
 * begin, and a record that puts an event into a capture, wait until every
 * query that was in flight has left. Then:
 *  - a query that looked before a capture began has left before the
 *    driver sees the begin (cg_query_fence_wait(true) in the begin, with
 *    membarrier making the slots' plain stores visible);
 *  - a query that judged an event not captured has left before the driver
 *    sees that event recorded into a capture (the record marks the event in
 *    the model first, then waits: cg_query_fence_wait(false)).
 *
 * Parking (x86-64): a begin pays its membarrier only while a querier may be
 * inside a query. A slot whose word did not move between two begins (its
 * thread made no query for a whole interval) is parked by the second: its
 * word set to CG_QUERY_UNCLAIMED with a compare-and-swap, a second
 * membarrier, and the word read again; unchanged, the slot is marked
 * parked. A parked thread's next increment gives 0, which already sends
 * the fast path to the C body (no new instruction on the query's path),
 * and the C body unparks with a locked exchange before it reads the
 * capture activity: so a begin that finds every other slot parked after
 * its own change and a full fence needs neither the membarrier nor the
 * wait (query_fence.c says why each step holds). */
#ifndef CAPGUARD_QUERY_FENCE_H
#define CAPGUARD_QUERY_FENCE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  int taken; /* a live thread owns the slot */
  /* The owner's word (cg_query_seq or cg_breaker_seq, NULL once it exits),
   * and how many waiters are reading it now (its exit waits for them). */
  unsigned *tls_seq;
  unsigned readers;
  /* CG_SLOT_ACTIVE, CG_SLOT_PARKING (a begin set the word to
   * CG_QUERY_UNCLAIMED and has not confirmed it yet) or CG_SLOT_PARKED;
   * set by the begin that parks, cleared by the owner (a locked exchange). */
  int parked;
  /* The word as the last begin that looked at it saw it (the parking
   * begin's alone); equal at the next, the thread made no query between. */
  unsigned idle_seen;
} __attribute__((aligned(64))) cg_query_slot;
enum { CG_SLOT_ACTIVE, CG_SLOT_PARKED, CG_SLOT_PARKING };

/* Two fences, each with its own slots: event queries (waited for by begins
 * and records), and the other breakers' fast paths (waited for by an end
 * that failed with no first offender known: such a call refused by the
 * driver stays in flight until its refusal is attributed). */
enum { CG_FENCE_QUERIES, CG_FENCE_BREAKERS, CG_FENCES };

/* The calling thread's slot in each fence; NULL until its first call. */
extern __thread cg_query_slot *cg_fence_self[CG_FENCES] __attribute__((tls_model("initial-exec")));
/* Claims one (NULL past the last slot: that thread's calls count in a
 * shared counter instead), and points it at the thread's word of that
 * fence, set to 0. */
cg_query_slot *cg_fence_slot_claim(int fence);
void cg_fence_overflow_enter(int fence);
void cg_fence_overflow_leave(int fence);

/* A fence word's value before its thread has a slot (and a parked
 * query slot's): the increment that makes it 0 says so. */
#define CG_QUERY_UNCLAIMED 0xFFFFFFFFu

/* The breakers' word, as cg_query_seq is the queries' (below): odd while a
 * breaker of the calling thread is in the driver; CG_QUERY_UNCLAIMED until
 * the thread has a slot (never parked). A thread-local, so that the x86-64
 * fast path enters with one instruction on it, whose result 0 also says
 * "no slot yet" (route/fast_path.h). */
extern __thread unsigned cg_breaker_seq __attribute__((tls_model("initial-exec")));

/* A fence's word of the calling thread (word), entered and left with plain
 * increments, claiming a slot first where the word says it has none: the
 * breakers' everywhere, and the queries' where slots are never parked
 * (CG_QUERY_PARKS, below). NULL: the thread has no slot (past the last),
 * and the call counts in the shared counter. */
static inline unsigned *cg_fence_word_enter(int fence, unsigned *word) {
  if (__builtin_expect(*word == CG_QUERY_UNCLAIMED, 0) && !cg_fence_slot_claim(fence)) {
    cg_fence_overflow_enter(fence);
    return NULL;
  }
  __atomic_store_n(word, *word + 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return word;
}
/* word: what the enter returned. The word is odd until this store: no
 * begin parks an odd word, so nothing comes between this load and store. */
static inline void cg_fence_word_leave(int fence, unsigned *word) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__builtin_expect(!word, 0)) {
    cg_fence_overflow_leave(fence);
    return;
  }
  __atomic_store_n(word, *word + 1, __ATOMIC_RELEASE);
}
static inline unsigned *cg_breaker_enter(void) {
  return cg_fence_word_enter(CG_FENCE_BREAKERS, &cg_breaker_seq);
}
static inline void cg_breaker_leave(unsigned *b) { cg_fence_word_leave(CG_FENCE_BREAKERS, b); }
/* Whether a breaker of the calling thread is in the driver now. */
static inline bool cg_breaker_in_flight(void) {
  return cg_fence_self[CG_FENCE_BREAKERS] && (__atomic_load_n(&cg_breaker_seq, __ATOMIC_RELAXED) & 1);
}

/* The calling thread's query sequence number, odd while one of its event
 * queries is in flight. CG_QUERY_UNCLAIMED (each thread's first value)
 * until the thread has a slot, and again while its slot is parked: the
 * increment that makes it 0 sends the x86-64 fast path to the C wrapper,
 * which claims a slot or unparks its own. */
extern __thread unsigned cg_query_seq __attribute__((tls_model("initial-exec")));
/* Gives the thread a slot pointing at its cg_query_seq (set to 0); false
 * past the last slot (the thread's queries then count in a shared counter). */
bool cg_query_claim(void);
/* Only where the owner's increment is one instruction: a begin's parking
 * relies on the membarrier's interrupt landing before or after the
 * increment, never between its load and its store (query_fence.c). A C
 * `x = x + 1` may be a load, an add and a store; elsewhere slots are never
 * parked and every begin that finds another slot held pays the membarrier. */
#if defined(__x86_64__)
#define CG_QUERY_PARKS 1
#else
#define CG_QUERY_PARKS 0
#endif
/* The enter whose increment gave 0 (the word was CG_QUERY_UNCLAIMED):
 * claims a slot, or unparks the thread's own; then enters. */
unsigned *cg_query_enter_unclaimed(void);
/* NULL: counted in the shared counter; else the thread's word. */
static inline unsigned *cg_query_enter(void) {
#if CG_QUERY_PARKS
  /* One instruction, as the fast path's: a begin's compare-and-swap and
   * membarrier find it whole (query_fence.c). */
  bool was_unclaimed;
  __asm__ volatile("addl $1, %0" : "+m"(cg_query_seq), "=@ccz"(was_unclaimed)::"memory");
  if (__builtin_expect(was_unclaimed, 0))
    return cg_query_enter_unclaimed();
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return &cg_query_seq;
#else
  return cg_fence_word_enter(CG_FENCE_QUERIES, &cg_query_seq);
#endif
}
static inline void cg_query_leave(unsigned *q) { cg_fence_word_leave(CG_FENCE_QUERIES, q); }

/* Waits (bounded by limit_ns: past it, one warning for queries) until every
 * call of the fence in flight when it was called has left. asymmetric: the
 * calls may have looked with plain loads and no fence (the wrappers' fast
 * paths): made visible first with membarrier (a short pause where the
 * kernel lacks it). For the queries' fence, asymmetric (a begin) returns at
 * once where every other slot is parked, and parks the slots that stayed
 * idle since the last begin. */
void cg_fence_wait(int fence, bool asymmetric, unsigned long long limit_ns);
static inline void cg_query_fence_wait(bool asymmetric) {
  cg_fence_wait(CG_FENCE_QUERIES, asymmetric, 1000000000ull);
}

/* The diverted target (x86-64). The fast path of cuEventQuery calls
 * through cg_query_target without looking at the capture activity: the
 * target is the driver's cuEventQuery only while nothing captures, and
 * otherwise the divert (sname "_cg_divert", route/fast_path.h), which
 * sends the query to the C body. So:
 *  - a begin counts itself in the activity, then sets the divert, then
 *    waits for the queries in flight (cg_query_divert_and_wait). A query
 *    that loaded the driver's function loaded it before the divert was
 *    set, so it was in flight before the wait looked (membarrier, as for
 *    the activity before), and the begin waits for it;
 *  - the target is put back only by a query in flight that saw the
 *    activity at zero (cg_query_restore_target: a compare-and-swap from
 *    the divert, then a count of restores). Such a query looked before the
 *    begin counted itself, so the begin's wait covers it; if the count
 *    moved while the begin waited, the begin sets the divert and waits
 *    again (a query that loaded the put-back function before the divert
 *    was set again is then in flight for the second wait). No query that
 *    looks after the begin counted itself puts it back.
 * Captures ending leave the divert in place: the next query that finds
 * nothing capturing puts the driver's function back, once. */
#if CG_QUERY_PARKS
void cg_query_divert_and_wait(void);
/* With the caller's query in flight and the activity seen at zero. */
void cg_query_restore_target(void *driver_fn);
#else
static inline void cg_query_divert_and_wait(void) { cg_query_fence_wait(true); }
#endif

/* Whether a call of the fence, on another thread, is in flight now (a
 * snapshot: no membarrier, no waiting). */
bool cg_fence_busy(int fence);

/* The first use of the driver (registers for membarrier; the fast path's
 * target word and its divert, NULL where there is no such fast path), and
 * fork. */
void cg_query_fence_init(void **target, void *divert);
void cg_query_fence_atfork_child(void);

#endif
