/* FAKECUDA_SYNC_BLOCK_MS: every synchronize (stream, event, context) blocks
 * this long before it does anything, outside the fake's lock, as a rank
 * waiting for a peer that never comes would: what capguard's hang watch
 * (CAPGUARD_HANG_S) is tested with. FAKECUDA_QUERY_DELAY_US: every
 * cuEventQuery waits this long before it looks, outside the lock, which
 * widens the window in which a query that capguard let through meets a
 * capture begun meanwhile (the queries' fence's race tests).
 * FAKECUDA_LAUNCH_HOLD_MS: a graph launch holds its stream this long, as a
 * graph whose collective waits for a peer (or whose kernel spins) does: an
 * event recorded after it on that stream is not ready (cuEventQuery answers
 * CUDA_ERROR_NOT_READY, cuEventSynchronize waits) until then, and a
 * synchronize of the stream or the context waits for it.
 * FAKECUDA_LAUNCH_HOLD_AT=N: only the process's Nth graph launch holds. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "fake_internal.h"

void fc_sync_block(void) {
  const char *v = getenv("FAKECUDA_SYNC_BLOCK_MS");
  long ms = v ? strtol(v, NULL, 10) : 0;
  if (ms <= 0)
    return;
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

void fc_query_delay(void) {
  const char *v = getenv("FAKECUDA_QUERY_DELAY_US");
  long us = v ? strtol(v, NULL, 10) : 0;
  if (us <= 0)
    return;
  struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

/* What is held, by stream and by event handle: a table of its own, so that
 * a wait for it never holds the fake's lock. */
#define HOLDS 256
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  const void *key;
  uint64_t until;
} holds[HOLDS];
static unsigned graph_launches;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static long env_long(const char *name) {
  const char *v = getenv(name);
  return v ? strtol(v, NULL, 10) : 0;
}

/* Under hold_lock: the row of key, made when asked to. */
static uint64_t *hold_of(const void *key, int make) {
  for (int i = 0; i < HOLDS; i++)
    if (holds[i].key == key)
      return &holds[i].until;
  for (int i = 0; make && i < HOLDS; i++)
    if (holds[i].key == NULL) {
      holds[i].key = key;
      return &holds[i].until;
    }
  return NULL;
}

void fc_launch_hold(const void *stream) {
  long ms = env_long("FAKECUDA_LAUNCH_HOLD_MS"), at = env_long("FAKECUDA_LAUNCH_HOLD_AT");
  pthread_mutex_lock(&hold_lock);
  unsigned n = ++graph_launches;
  uint64_t *u;
  if (ms > 0 && (at <= 0 || n == (unsigned long)at) && (u = hold_of(stream, 1)))
    *u = now_ns() + (uint64_t)ms * 1000000ull;
  pthread_mutex_unlock(&hold_lock);
}

void fc_hold_recorded(const void *event, const void *stream) {
  pthread_mutex_lock(&hold_lock);
  uint64_t *s = hold_of(stream, 0), *e = hold_of(event, s != NULL);
  if (e)
    *e = s ? *s : 0;
  pthread_mutex_unlock(&hold_lock);
}

static uint64_t held_until(const void *key) {
  pthread_mutex_lock(&hold_lock);
  uint64_t until = 0;
  if (key) {
    uint64_t *u = hold_of(key, 0);
    until = u ? *u : 0;
  } else {
    for (int i = 0; i < HOLDS; i++)
      if (holds[i].key && holds[i].until > until)
        until = holds[i].until;
  }
  pthread_mutex_unlock(&hold_lock);
  return until;
}

int fc_held(const void *key) { return now_ns() < held_until(key); }

void fc_hold_wait(const void *key) {
  uint64_t until = held_until(key), now;
  while ((now = now_ns()) < until) {
    uint64_t left = until - now;
    struct timespec t = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    nanosleep(&t, NULL);
  }
}
