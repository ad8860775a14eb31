/* The fence between event queries and captures (docs/reliability.md, attack 1). In guard
 * mode no query of an event in an open capture may reach the driver (it
 * answers 907 and breaks the capture, whatever the thread or mode), however
 * the query interleaves with the capture's begin and the event's record.
 * Every cuEventQuery says, in a slot of its thread's own, that it is in
 * flight (a sequence number, odd while in flight: two plain stores, no
 * atomic read-modify-write, so the wrapper stays within its budget); a
 * begin, and a record that puts an event into a capture, wait until every
 * query that was in flight has left. Then:
 *  - a query that looked before a capture began has left before the
 *    driver sees the begin (cg_query_fence_wait(true) in the begin, with
 *    membarrier making the slots' plain stores visible);
 *  - a query that judged an event not captured has left before the driver
 *    sees that event recorded into a capture (the record marks the event in
 *    the model first, then waits: cg_query_fence_wait(false)). */
#ifndef CAPGUARD_QUERY_FENCE_H
#define CAPGUARD_QUERY_FENCE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  unsigned seq;   /* odd: a query of this slot's thread is in flight */
  int taken;      /* a live thread owns the slot */
} __attribute__((aligned(64))) cg_query_slot;

/* Two fences, each with its own slots: event queries (waited for by begins
 * and records), and the other breakers' fast paths (waited for by an end
 * that failed with no first offender known: such a call refused by the
 * driver stays in flight until its refusal is attributed). */
enum { CG_FENCE_QUERIES, CG_FENCE_BREAKERS, CG_FENCES };

/* The calling thread's slot in each fence; NULL until its first call. */
extern __thread cg_query_slot *cg_fence_self[CG_FENCES] __attribute__((tls_model("initial-exec")));
/* Claims one (NULL past the last slot: that thread's calls count in a
 * shared counter instead). */
cg_query_slot *cg_fence_slot_claim(int fence);
void cg_fence_overflow_enter(int fence);
void cg_fence_overflow_leave(int fence);

static inline cg_query_slot *cg_fence_enter(int fence) {
  cg_query_slot *s = cg_fence_self[fence];
  if (__builtin_expect(!s, 0)) {
    s = cg_fence_slot_claim(fence);
    if (!s) {
      cg_fence_overflow_enter(fence);
      return NULL;
    }
  }
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return s;
}
static inline void cg_fence_leave(int fence, cg_query_slot *s) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__builtin_expect(!s, 0)) {
    cg_fence_overflow_leave(fence);
    return;
  }
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}
static inline cg_query_slot *cg_query_enter(void) { return cg_fence_enter(CG_FENCE_QUERIES); }
static inline void cg_query_leave(cg_query_slot *s) { cg_fence_leave(CG_FENCE_QUERIES, s); }

/* Waits (bounded by limit_ns: past it, one warning for queries) until every
 * call of the fence in flight when it was called has left. asymmetric: the
 * calls may have looked with plain loads and no fence (the wrappers' fast
 * paths): made visible first with membarrier (a short pause where the
 * kernel lacks it). */
void cg_fence_wait(int fence, bool asymmetric, unsigned long long limit_ns);
static inline void cg_query_fence_wait(bool asymmetric) {
  cg_fence_wait(CG_FENCE_QUERIES, asymmetric, 1000000000ull);
}

/* Whether a call of the fence, on another thread, is in flight now (a
 * snapshot: no membarrier, no waiting). */
bool cg_fence_busy(int fence);

/* Start-up (registers for membarrier) and fork. */
void cg_query_fence_init(void);
void cg_query_fence_atfork_child(void);

#endif
