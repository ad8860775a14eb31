#include "locks.h"
#include "capture_time.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/clock.h"
#include "driver.h" /* cg_driver_launch_watch */
#include "live_captures.h" /* cg_begin_site_text */

unsigned cg_launch_watch;

/* The first begin's wall-clock label, and its monotonic time, which the
 * first replay is measured from: the first replay's label is the begin's
 * plus that, so a step of the wall clock between them changes neither. */
static uint64_t first_begin_ns, first_begin_mono_ns, first_replay_ns;
/* Captures ended and their time, added up in shards of a cache line each,
 * a thread to a shard (given in turn at its first end), summed when read:
 * with one pair every thread capturing at once added to the same line, and
 * each end took it from the core of the last, with the line every begin and
 * every graph launch reads (first_begin_ns). */
enum { TIME_SHARDS = 16 };
static struct {
  uint64_t ended, ns;
} __attribute__((aligned(64))) shards[TIME_SHARDS];
static unsigned shards_given;
static __thread unsigned own_shard __attribute__((tls_model("initial-exec"))); /* shard + 1; 0: none yet */
/* The slowest so far, slowest first, under slow_lock; slow_floor is the
 * shortest of them once all slots are full (0 before): a capture no slower
 * never takes the lock. */
static pthread_mutex_t slow_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t slow_floor;
static size_t n_slow;
static struct {
  uint64_t id, ns;
  void *site;
} slow[CG_SLOWEST_CAPTURES];

/* The targets follow the word: looked at again after each change is told,
 * so that of two threads turning it on and off the last told agrees. */
static void launch_watch_changed(void) {
  unsigned w;
  do {
    w = __atomic_load_n(&cg_launch_watch, __ATOMIC_SEQ_CST);
    cg_driver_launch_watch(w != 0);
  } while ((__atomic_load_n(&cg_launch_watch, __ATOMIC_SEQ_CST) != 0) != (w != 0));
}

void cg_launch_watch_set(unsigned bit) {
  if (!__atomic_fetch_or(&cg_launch_watch, bit, __ATOMIC_SEQ_CST))
    launch_watch_changed();
}

void cg_launch_watch_clear(unsigned bit) {
  if (__atomic_fetch_and(&cg_launch_watch, ~bit, __ATOMIC_SEQ_CST) == bit)
    launch_watch_changed();
}

void cg_capture_time_begun(void) {
  if (__atomic_load_n(&first_begin_ns, __ATOMIC_RELAXED))
    return;
  uint64_t none = 0, mono = cg_monotonic_ns(); /* the first begin only */
  if (__atomic_compare_exchange_n(&first_begin_mono_ns, &none, mono ? mono : 1, false, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED)) {
    uint64_t now_ns = cg_now_ns();
    __atomic_store_n(&first_begin_ns, now_ns ? now_ns : 1, __ATOMIC_RELEASE);
    cg_launch_watch_set(CG_WATCH_REPLAY);
  }
}

void cg_capture_time_launch(uint64_t mono_ns) {
  uint64_t begin = __atomic_load_n(&first_begin_ns, __ATOMIC_ACQUIRE);
  if (!begin)
    return;
  uint64_t none = 0, begin_mono = __atomic_load_n(&first_begin_mono_ns, __ATOMIC_RELAXED);
  uint64_t label = begin + (mono_ns > begin_mono ? mono_ns - begin_mono : 0);
  __atomic_compare_exchange_n(&first_replay_ns, &none, label, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  cg_launch_watch_clear(CG_WATCH_REPLAY);
}

static bool keep_slow(const cg_capture *closed, void *site, uint64_t ns);

bool cg_capture_time_ended(const cg_capture *closed, void *site) {
  /* the labels' difference is monotonic time (live_captures.c); an end
   * labelled before its begin (a record of another clock) counts for none */
  uint64_t ns = closed->end_ns > closed->begin_ns ? closed->end_ns - closed->begin_ns : 0;
  if (__builtin_expect(!own_shard, 0))
    own_shard = __atomic_fetch_add(&shards_given, 1, __ATOMIC_RELAXED) % TIME_SHARDS + 1;
  __atomic_add_fetch(&shards[own_shard - 1].ended, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&shards[own_shard - 1].ns, ns, __ATOMIC_RELAXED);
  if (ns <= __atomic_load_n(&slow_floor, __ATOMIC_RELAXED) || !site)
    return false;
  return keep_slow(closed, site, ns);
}

/* Among the slowest so far: kept in order. Apart, so that the common answer
 * above needs no frame of its own (six registers saved and restored). */
static __attribute__((noinline)) bool keep_slow(const cg_capture *closed, void *site, uint64_t ns) {
  void *dropped = NULL;
  bool kept = false;
  cg_lock(&slow_lock);
  size_t at = n_slow;
  while (at > 0 && slow[at - 1].ns < ns)
    at--;
  if (at < CG_SLOWEST_CAPTURES) {
    if (n_slow == CG_SLOWEST_CAPTURES)
      dropped = slow[--n_slow].site;
    for (size_t i = n_slow; i > at; i--)
      slow[i] = slow[i - 1];
    slow[at].id = closed->id;
    slow[at].ns = ns;
    slow[at].site = site;
    n_slow++;
    kept = true;
    if (n_slow == CG_SLOWEST_CAPTURES)
      __atomic_store_n(&slow_floor, slow[n_slow - 1].ns, __ATOMIC_RELAXED);
  }
  cg_unlock(&slow_lock);
  free(dropped);
  return kept;
}

void cg_capture_time_read(cg_summary *s, char (*began)[CG_BEGAN_TEXT]) {
  s->captures_timed = s->capture_ns = 0;
  for (int i = 0; i < TIME_SHARDS; i++) {
    s->captures_timed += __atomic_load_n(&shards[i].ended, __ATOMIC_RELAXED);
    s->capture_ns += __atomic_load_n(&shards[i].ns, __ATOMIC_RELAXED);
  }
  s->first_capture_ns = __atomic_load_n(&first_begin_ns, __ATOMIC_RELAXED);
  s->first_replay_ns = __atomic_load_n(&first_replay_ns, __ATOMIC_RELAXED);
  /* Symbolized under the lock, so that no capture's end frees a site being
   * read; only when asked (at exit: dladdr is slow). At exit, never a wait
   * that could hang it (locks.h): without the lock, no slowest. */
  s->n_slowest = 0;
  if (!cg_lock_or_exit_lock(&slow_lock, "the slowest captures"))
    return;
  s->n_slowest = n_slow;
  for (size_t i = 0; i < n_slow; i++) {
    s->slowest[i].id = slow[i].id;
    s->slowest[i].ns = slow[i].ns;
    s->slowest[i].began = NULL;
    if (began) {
      cg_begin_site_text(slow[i].site, began[i], CG_BEGAN_TEXT);
      s->slowest[i].began = began[i];
    }
  }
  cg_unlock(&slow_lock);
}

void cg_capture_time_atfork_child(void) {
  pthread_mutex_init(&slow_lock, NULL);
  for (size_t i = 0; i < n_slow; i++)
    free(slow[i].site);
  n_slow = 0;
  slow_floor = 0;
  memset(shards, 0, sizeof shards);
  first_begin_ns = first_begin_mono_ns = first_replay_ns = 0;
  cg_launch_watch = 0;
  cg_driver_launch_watch(false);
}
