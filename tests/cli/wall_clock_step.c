/* A wall clock that an operator (or NTP) steps, for test_cli_clock_step.sh:
 * preloaded, it answers clock_gettime for CLOCK_REALTIME (and its coarse
 * twin) with the kernel's time plus an offset that the program under test
 * moves with wall_clock_step(ns), found by dlsym. Every other clock,
 * CLOCK_MONOTONIC included, is the kernel's own. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long offset_ns;

__attribute__((visibility("default"))) void wall_clock_step(long long ns) {
  __atomic_add_fetch(&offset_ns, ns, __ATOMIC_RELAXED);
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t c, struct timespec *ts) {
  if (syscall(SYS_clock_gettime, c, ts) != 0)
    return -1;
  if (c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE) {
    long long ns =
        (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + __atomic_load_n(&offset_ns, __ATOMIC_RELAXED);
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
  }
  return 0;
}
