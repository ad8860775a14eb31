#include "signals_held.h"

#include <pthread.h>

static __thread const sigset_t *host_mask __attribute__((tls_model("initial-exec")));

const sigset_t *cg_signals_host_mask(void) { return host_mask; }

void cg_signals_hold(cg_signals *s) {
  sigset_t all;
  sigfillset(&all);
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
  for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; i++)
    sigdelset(&all, faults[i]);
  s->held = pthread_sigmask(SIG_BLOCK, &all, &s->old) == 0;
  s->outermost = s->held && !host_mask;
  if (s->outermost)
    host_mask = &s->old;
}

void cg_signals_release(cg_signals *s) {
  if (s->outermost)
    host_mask = NULL;
  s->outermost = false;
  if (s->held)
    pthread_sigmask(SIG_SETMASK, &s->old, NULL);
  s->held = false;
}
