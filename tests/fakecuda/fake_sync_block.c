/* FAKECUDA_SYNC_BLOCK_MS: every synchronize (stream, event, context) blocks
 * this long before it does anything, outside the fake's lock, as a rank
 * waiting for a peer that never comes would: what capguard's hang watch
 * (CAPGUARD_HANG_S) is tested with. FAKECUDA_QUERY_DELAY_US: every
 * cuEventQuery waits this long before it looks, outside the lock, which
 * widens the window in which a query that capguard let through meets a
 * capture begun meanwhile (the queries' fence's race tests). */
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
