/* Calls in flight, each in a slot holding a tick of the shim's clock
 * (cg_captures_tick) from before the driver may have acted on it; past the
 * last slot a shared counter counts them, and a reader takes such a call as
 * the earliest. The begins between the driver and the model
 * (live_captures.c) and the refusals not yet marked (break_rules.c) are
 * kept so: a reader asks whether any in flight is older than a tick, and
 * waits for it. Bounded, lock-free, no allocation: safe inside a driver
 * call. Inline: a begin and a refusal take and give a slot each.
 * Each slot has a cache line of its own, and a thread looks for a free one
 * from a place of its own (its thread id's): with every thread starting at
 * the first slot, 64 threads beginning at once fought over the same few
 * lines, each CAS taking the line from the core that wrote it last. */
#ifndef CAPGUARD_TICK_SLOTS_H
#define CAPGUARD_TICK_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CG_TICK_SLOTS 64

typedef struct {
  struct {
    uint64_t tick; /* 0: free */
  } __attribute__((aligned(64))) slot[CG_TICK_SLOTS];
  unsigned unslotted __attribute__((aligned(64))); /* in flight with no slot */
} cg_tick_slots;
_Static_assert(offsetof(cg_tick_slots, slot[0].tick) == 0, "cg_tick_claim's tick word starts each slot");

/* Claims one of n slots, each `stride` bytes from the last and starting
 * with its tick word (0: free), by storing tick (not 0) there; looked for
 * from slot `from` on (any number: the caller's thread id). Returns the
 * slot + 1, or 0 when every slot was taken. Also ending_slots.h's. */
static inline int cg_tick_claim(void *slots, size_t stride, int n, uint64_t tick, uint64_t from) {
  for (int k = 0, i = (int)(from % (uint64_t)n); k < n; k++, i = (i + 1) % n) {
    uint64_t *word = (uint64_t *)((char *)slots + (size_t)i * stride), free_ = 0;
    if (!__atomic_load_n(word, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(word, &free_, tick, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
      return i + 1;
  }
  return 0;
}

/* A free slot for tick (not 0), looked for from slot `from` on: returns it
 * + 1, or 0 when every slot was taken and the call is counted in unslotted
 * instead. */
static inline int cg_tick_slots_take(cg_tick_slots *s, uint64_t tick, uint64_t from) {
  int got = cg_tick_claim(s->slot, sizeof s->slot[0], CG_TICK_SLOTS, tick, from);
  if (!got)
    __atomic_add_fetch(&s->unslotted, 1, __ATOMIC_SEQ_CST);
  return got;
}

/* Gives back what cg_tick_slots_take returned. */
static inline void cg_tick_slots_give(cg_tick_slots *s, int taken) {
  if (taken)
    __atomic_store_n(&s->slot[taken - 1].tick, 0, __ATOMIC_SEQ_CST);
  else
    __atomic_sub_fetch(&s->unslotted, 1, __ATOMIC_SEQ_CST);
}

/* Whether a call in flight may be older than tick (every unslotted one may). */
static inline bool cg_tick_slots_before(cg_tick_slots *s, uint64_t tick) {
  if (__atomic_load_n(&s->unslotted, __ATOMIC_SEQ_CST))
    return true;
  for (int i = 0; i < CG_TICK_SLOTS; i++) {
    uint64_t t = __atomic_load_n(&s->slot[i].tick, __ATOMIC_SEQ_CST);
    if (t && t < tick)
      return true;
  }
  return false;
}

/* In a forked child, where the other threads' calls never leave: none in
 * flight, save the calling thread's own (taken, with tick) when keep. */
static inline void cg_tick_slots_reset(cg_tick_slots *s, bool keep, int taken, uint64_t tick) {
  memset(s, 0, sizeof *s);
  if (keep && taken)
    s->slot[taken - 1].tick = tick;
  else if (keep)
    s->unslotted = 1;
}

#endif
