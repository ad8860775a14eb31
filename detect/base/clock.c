#include "capguard/clock.h"

#include <time.h>

static uint64_t clock_ns(clockid_t c) {
  struct timespec ts;
  if (clock_gettime(c, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cg_now_ns(void) { return clock_ns(CLOCK_REALTIME); }

uint64_t cg_monotonic_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
