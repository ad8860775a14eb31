#include "locks.h"
#include "fleet_counts.h"

#include <pthread.h>
#include <string.h>

/* Distinct calls that may be refused: the rows and the driver's log's
 * names; past it, refusals are counted under "other". */
#define MAX_CALLS 64

static uint64_t loads[CG_VERDICT_COUNT];
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  const char *call;
  uint64_t n;
} calls[MAX_CALLS];
static size_t n_calls;
static uint64_t other_calls;

/* capguard refusing a call as an older driver would is a refusal too. */
static bool refused(cg_verdict v) { return v == CG_VERDICT_REFUSED || v == CG_VERDICT_EMULATED; }

void cg_fleet_count(const cg_event *e) {
  if (e->kind == CG_EV_MODULE_LOAD && (unsigned)e->verdict < CG_VERDICT_COUNT)
    __atomic_add_fetch(&loads[refused(e->verdict) ? CG_VERDICT_REFUSED : e->verdict], 1, __ATOMIC_RELAXED);
  if (!refused(e->verdict) || !e->call)
    return;
  /* Names are the rows' (one pointer each) or the driver's log's (interned):
   * compared by their text all the same. Refusals are rare: a lock is fine. */
  cg_lock(&calls_lock);
  size_t i = 0;
  while (i < n_calls && strcmp(calls[i].call, e->call) != 0)
    i++;
  if (i < n_calls)
    calls[i].n++;
  else if (n_calls < MAX_CALLS) {
    calls[n_calls].call = e->call;
    calls[n_calls++].n = 1;
  } else {
    other_calls++;
  }
  cg_unlock(&calls_lock);
}

size_t cg_fleet_counts_read(uint64_t out_loads[CG_VERDICT_COUNT], cg_metrics_call *out, size_t cap) {
  for (int v = 0; v < CG_VERDICT_COUNT; v++)
    out_loads[v] = __atomic_load_n(&loads[v], __ATOMIC_RELAXED);
  /* at exit, never a wait that could hang it (locks.h): without the lock, no calls */
  if (!cg_lock_or_exit_lock(&calls_lock, "the metrics' refusals by call"))
    return 0;
  size_t n = 0;
  for (; n < n_calls && n < cap; n++)
    out[n] = (cg_metrics_call){calls[n].call, calls[n].n};
  if (other_calls && n < cap)
    out[n++] = (cg_metrics_call){"other", other_calls};
  cg_unlock(&calls_lock);
  return n;
}

void cg_fleet_counts_atfork_child(void) {
  pthread_mutex_init(&calls_lock, NULL);
  memset(loads, 0, sizeof loads);
  n_calls = 0;
  other_calls = 0;
}
