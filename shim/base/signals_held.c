#include "signals_held.h"

#include <pthread.h>

void cg_signals_hold(cg_signals *s) {
  sigset_t all;
  sigfillset(&all);
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
  for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; i++)
    sigdelset(&all, faults[i]);
  s->held = pthread_sigmask(SIG_BLOCK, &all, &s->old) == 0;
}

void cg_signals_release(cg_signals *s) {
  if (s->held)
    pthread_sigmask(SIG_SETMASK, &s->old, NULL);
  s->held = false;
}
