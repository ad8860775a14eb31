/* FAKECUDA_SYNC_BLOCK_MS: every synchronize (stream, event, context) blocks
 * this long before it does anything, outside the fake's lock, as a rank
 * waiting for a peer that never comes would: what capguard's hang watch
 * (CAPGUARD_HANG_S) is tested with. */
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
