/* Capture ends in flight, each in a slot holding its stream's key and a
 * tick of the shim's clock (cg_captures_tick) taken before the driver's end,
 * from the end's entry until the model has taken the end in
 * (live_captures.c). A refusal judged meanwhile (break_rules.c) reads the
 * capture's end tick here: so a capture's end takes the model's lock once,
 * after the driver's end, instead of once more before it only to stamp the
 * tick (every thread capturing at once queued on that lock twice an end).
 * Bounded, lock-free, no allocation; one cache line a slot, looked for from
 * a place of the thread's own (tick_slots.h says why). An end that finds no
 * free slot stamps the capture under the model's lock instead. */
#ifndef CAPGUARD_ENDING_SLOTS_H
#define CAPGUARD_ENDING_SLOTS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tick_slots.h"

#define CG_ENDING_SLOTS 64

typedef struct {
  struct {
    uint64_t tick; /* 0: free; taken first, given back last */
    uint64_t key;  /* 0 until stored, and before the slot is given back */
  } __attribute__((aligned(64))) slot[CG_ENDING_SLOTS];
} cg_ending_slots;
_Static_assert(offsetof(cg_ending_slots, slot[0].tick) == 0, "cg_tick_claim's tick word starts each slot");

/* A slot for an end of key at tick (not 0), published before the driver's
 * end: returns it + 1, or 0 when every slot is taken. */
static inline int cg_ending_take(cg_ending_slots *s, uint64_t key, uint64_t tick, uint64_t from) {
  int got = cg_tick_claim(s->slot, sizeof s->slot[0], CG_ENDING_SLOTS, tick, from);
  if (got)
    __atomic_store_n(&s->slot[got - 1].key, key, __ATOMIC_SEQ_CST);
  return got;
}

/* Given back under the model's lock, once the model has the end: a reader
 * holding that lock never sees an end both in the model and in a slot
 * half given back. The key is cleared first, so a slot just taken again
 * never shows the previous end's key with the new end's tick. */
static inline void cg_ending_give(cg_ending_slots *s, int taken) {
  if (!taken)
    return;
  __atomic_store_n(&s->slot[taken - 1].key, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->slot[taken - 1].tick, 0, __ATOMIC_SEQ_CST);
}

/* The earliest tick of an end of key in flight that was entered after
 * tick `after` (an end entered before a capture began is not that
 * capture's), or 0. An end whose driver call came before a reader's
 * refusal has stored its key before that call: the reader sees it. */
static inline uint64_t cg_ending_tick(cg_ending_slots *s, uint64_t key, uint64_t after) {
  uint64_t earliest = 0;
  for (int i = 0; i < CG_ENDING_SLOTS; i++) {
    uint64_t t = __atomic_load_n(&s->slot[i].tick, __ATOMIC_SEQ_CST);
    if (t && t > after && (!earliest || t < earliest) && __atomic_load_n(&s->slot[i].key, __ATOMIC_SEQ_CST) == key)
      earliest = t;
  }
  return earliest;
}

/* In a forked child, where the other threads' ends never leave. */
static inline void cg_ending_reset(cg_ending_slots *s) { memset(s, 0, sizeof *s); }

#endif
