/* The fence between event queries and captures (issue 15, item 1). In guard
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

/* The calling thread's slot; NULL until its first query. */
extern __thread cg_query_slot *cg_query_self __attribute__((tls_model("initial-exec")));
/* Claims one (NULL past the last slot: that thread's queries count in a
 * shared counter instead). */
cg_query_slot *cg_query_slot_claim(void);
void cg_query_overflow_enter(void);
void cg_query_overflow_leave(void);

static inline cg_query_slot *cg_query_enter(void) {
  cg_query_slot *s = cg_query_self;
  if (__builtin_expect(!s, 0)) {
    s = cg_query_slot_claim();
    if (!s) {
      cg_query_overflow_enter();
      return NULL;
    }
  }
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return s;
}
static inline void cg_query_leave(cg_query_slot *s) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__builtin_expect(!s, 0)) {
    cg_query_overflow_leave();
    return;
  }
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* Waits (bounded: one warning past it) until every query in flight when it
 * was called has left. asymmetric: the queries may have looked with plain
 * loads and no fence (the wrapper's fast path): made visible first with
 * membarrier (a short pause where the kernel lacks it). */
void cg_query_fence_wait(bool asymmetric);

/* Start-up (registers for membarrier) and fork. */
void cg_query_fence_init(void);
void cg_query_fence_atfork_child(void);

#endif
