#include "hang_slots.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "live_captures.h" /* cg_self_tid */

/* strlen bounded by cap - 1 (a copy into cap bytes). */
static size_t bounded_len(const char *s, size_t cap) {
  const char *nul = memchr(s, '\0', cap - 1);
  return nul ? (size_t)(nul - s) : cap - 1;
}

unsigned cg_hang_s;
cg_hang_slot cg_hang_slots[CG_HANG_SLOTS];

/* The calling thread's slot, claimed at its first blocking call; -2: the
 * table was full (the thread is not watched). */
static __thread int my_slot __attribute__((tls_model("initial-exec"))) = -1;

/* The latest graph: two copies of where it began, the one published by
 * index, so that the watcher reads a whole one while the next capture
 * writes the other; symbolized by the watcher, only if it says a wait. */
static cg_begin_site latest_site[2];
static uint64_t latest_id[2];
static unsigned latest_at;

/* The coarse clock: a few ms of resolution is plenty for a watch in seconds,
 * and it is read from the vDSO without the hardware counter (CLOCK_MONOTONIC
 * cost 100+ ns a read on a VM whose clock source is not the TSC). */
uint64_t cg_hang_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A thread's slot is given back when it ends (returns, pthread_exit, or is
 * cancelled inside a synchronize: the key's destructor runs in each case):
 * what it was in is forgotten before the slot is free, so a thread that is
 * gone is never said to wait, and the slots serve threads that come and go
 * by the thousand. */
static pthread_key_t slot_key;
static pthread_once_t slot_key_once = PTHREAD_ONCE_INIT;
static bool slot_key_made;

static void give_back(void *unused) {
  (void)unused;
  if (my_slot < 0)
    return;
  cg_hang_slot *s = &cg_hang_slots[my_slot];
  __atomic_store_n(&s->call_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->capture_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE); /* free, after the rest */
  my_slot = -1;                                   /* a later destructor's synchronize claims one again */
}

static void make_slot_key(void) { slot_key_made = pthread_key_create(&slot_key, give_back) == 0; }

static cg_hang_slot *slot(void) {
  if (my_slot >= 0)
    return &cg_hang_slots[my_slot];
  if (my_slot == -2)
    return NULL;
  uint64_t tid = cg_self_tid();
  for (int i = 0; i < CG_HANG_SLOTS; i++) {
    uint64_t free_ = 0;
    if (__atomic_compare_exchange_n(&cg_hang_slots[i].tid, &free_, tid, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      my_slot = i;
      pthread_once(&slot_key_once, make_slot_key);
      if (slot_key_made)
        pthread_setspecific(slot_key, &cg_hang_slots[i]); /* any non-NULL value: the destructor runs */
      return &cg_hang_slots[i];
    }
  }
  my_slot = -2;
  return NULL;
}

void cg_hang_call_enter(const char *call, uint64_t handle, void *caller) {
  cg_hang_slot *s = slot();
  if (!s)
    return;
  __atomic_store_n(&s->call, call, __ATOMIC_RELAXED);
  __atomic_store_n(&s->handle, handle, __ATOMIC_RELAXED);
  __atomic_store_n(&s->caller, caller, __ATOMIC_RELAXED);
  __atomic_store_n(&s->call_ns, cg_hang_now(), __ATOMIC_RELEASE); /* the rest is read after this */
}

void cg_hang_call_leave(void) {
  if (my_slot >= 0)
    __atomic_store_n(&cg_hang_slots[my_slot].call_ns, 0, __ATOMIC_RELAXED);
}

void cg_hang_capture_begun(uint64_t stream, uint64_t key, const void *where) {
  cg_hang_slot *s = slot();
  if (!s)
    return;
  const cg_begin_site *site = where;
  const char *python = site ? site->python : "";
  __atomic_store_n(&s->capture_ns, 0, __ATOMIC_RELAXED);
  /* the site is written while capture_ns is 0: the watcher reads it only after */
  size_t n = python ? bounded_len(python, CG_HANG_SITE) : 0;
  memcpy(s->capture_site, python ? python : "", n);
  s->capture_site[n] = '\0';
  s->capture_caller = site && site->n > 0 ? site->frames[0] : NULL;
  __atomic_store_n(&s->capture_stream, stream, __ATOMIC_RELAXED);
  __atomic_store_n(&s->capture_key, key, __ATOMIC_RELAXED);
  __atomic_store_n(&s->capture_ns, cg_hang_now(), __ATOMIC_RELEASE);
}

/* Which capture a slot has open, found without a scan when the thread that
 * began it ends it (the usual case). */
static void capture_closed(uint64_t key) {
  if (my_slot >= 0 && __atomic_load_n(&cg_hang_slots[my_slot].capture_key, __ATOMIC_RELAXED) == key) {
    __atomic_store_n(&cg_hang_slots[my_slot].capture_ns, 0, __ATOMIC_RELAXED);
    return;
  }
  /* the thread that began it may not be the one that ends it */
  for (int i = 0; i < CG_HANG_SLOTS; i++) {
    cg_hang_slot *s = &cg_hang_slots[i];
    if (__atomic_load_n(&s->capture_ns, __ATOMIC_RELAXED) && __atomic_load_n(&s->capture_key, __ATOMIC_RELAXED) == key)
      __atomic_store_n(&s->capture_ns, 0, __ATOMIC_RELAXED);
  }
}

void cg_hang_capture_over(uint64_t key, uint64_t id, const void *began, bool graph) {
  capture_closed(key);
  if (!graph)
    return;
  unsigned next = (__atomic_load_n(&latest_at, __ATOMIC_RELAXED) + 1) & 1;
  const cg_begin_site *site = began;
  if (site)
    latest_site[next] = *site;
  else
    latest_site[next].n = 0, latest_site[next].python[0] = '\0';
  latest_id[next] = id;
  __atomic_store_n(&latest_at, next, __ATOMIC_RELEASE);
}

uint64_t cg_hang_latest_graph(char *buf, unsigned cap) {
  unsigned at = __atomic_load_n(&latest_at, __ATOMIC_ACQUIRE);
  cg_begin_site site = latest_site[at];
  if (cap) {
    if (latest_id[at])
      cg_begin_site_text(&site, buf, cap);
    else
      buf[0] = '\0';
  }
  return latest_id[at];
}
