#include "forks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/clock.h"
#include "names.h"
#include "locks.h"

#define FORKS 256

/* A first offender made here (cg_break_of is break_rules.c's, which calls
 * in here: no call loops between files). */
static cg_break offender(const char *call, cg_event_kind kind, CUresult r, const cg_begin_site *site) {
  cg_break b = {.who = {.call = call, .kind = kind, .verdict = CG_VERDICT_BROKE, .result = (int)r,
                        .tid = cg_self_tid(), .time_ns = cg_now_ns()}};
  if (site)
    b.site = *site;
  return b;
}

typedef struct {
  uint64_t capture_id, stream_key, last_event;
  int joined;
  const char *call;
  cg_begin_site *site;
} fork_entry;

/* Never held across a driver call, a backtrace or a write. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fork_entry forks[FORKS];
/* Entries in use: an end with none to look at (most captures fork nothing
 * capguard sees) skips the scan of the table, 1,600 instructions. Written
 * under the lock; read without it by an end, whose own capture's entries,
 * if any, were added before the end (the begin, the fork and the end are
 * ordered by the capture gate and the model). */
static unsigned forks_used;

void cg_fork_add(uint64_t capture_id, uint64_t stream_key, const char *call, cg_begin_site *site) {
  cg_lock(&lock);
  for (int i = 0; i < FORKS; i++) {
    if (forks[i].capture_id == capture_id && forks[i].stream_key == stream_key) {
      forks[i].joined = 0; /* forked again */
      cg_unlock(&lock);
      free(site);
      return;
    }
  }
  for (int i = 0; i < FORKS; i++) {
    if (!forks[i].capture_id) {
      forks[i] = (fork_entry){capture_id, stream_key, 0, 0, call, site};
      __atomic_store_n(&forks_used, forks_used + 1, __ATOMIC_RELEASE);
      site = NULL;
      break;
    }
  }
  cg_unlock(&lock);
  free(site);
}

void cg_fork_event_recorded(uint64_t stream_key, uint64_t event) {
  cg_lock(&lock);
  for (int i = 0; i < FORKS; i++)
    if (forks[i].capture_id && forks[i].stream_key == stream_key) {
      forks[i].last_event = event;
      forks[i].joined = 0; /* work since the last join, as far as capguard can tell */
    }
  cg_unlock(&lock);
}

void cg_fork_joined(uint64_t capture_id, uint64_t event) {
  cg_lock(&lock);
  for (int i = 0; i < FORKS; i++)
    if (forks[i].capture_id == capture_id && forks[i].last_event == event)
      forks[i].joined = 1;
  cg_unlock(&lock);
}

void cg_forks_atfork_child(void) {
  pthread_mutex_init(&lock, NULL);
  memset(forks, 0, sizeof forks);
}

cg_break *cg_end_offender(uint64_t capture_id, CUresult r) {
  /* The first fork never joined back; failing that (work on a joined fork
   * after its last join is invisible to capguard: launches on other streams
   * pass straight through), the last fork joined, which then holds it. */
  bool any = __atomic_load_n(&forks_used, __ATOMIC_ACQUIRE) != 0;
  if (!any && r != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
    return NULL; /* no fork to name, nor a wrong thread: every end of a capture without forks */
  fork_entry unjoined = {0}, joined = {0};
  if (any)
    cg_lock(&lock);
  for (int i = 0; any && i < FORKS; i++) {
    if (forks[i].capture_id != capture_id)
      continue;
    if (!unjoined.capture_id && !forks[i].joined) {
      unjoined = forks[i];
    } else if (forks[i].joined) {
      free(joined.site);
      joined = forks[i];
    } else {
      free(forks[i].site);
    }
    forks[i] = (fork_entry){0};
    __atomic_store_n(&forks_used, forks_used - 1, __ATOMIC_RELEASE);
  }
  if (any)
    cg_unlock(&lock);
  if (!unjoined.capture_id)
    unjoined = joined;
  else
    free(joined.site);
  cg_break *b = NULL;
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNJOINED && unjoined.capture_id) {
    char call[96];
    snprintf(call, sizeof call, "%s forking stream 0x%llx, never joined", unjoined.call,
             (unsigned long long)unjoined.stream_key);
    b = malloc(sizeof *b);
    if (b)
      *b = offender(cg_name_intern(call, unjoined.call), CG_EV_UNJOINED, r, unjoined.site);
  } else if (r == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
    cg_begin_site *here = cg_site_take(CG_BEGIN_SITE_FRAMES + 2);
    b = malloc(sizeof *b);
    if (b)
      *b = offender("cuStreamEndCapture from a thread that did not begin the capture", CG_EV_WRONG_THREAD, r,
                    here);
    free(here);
  }
  free(unjoined.site);
  return b;
}
