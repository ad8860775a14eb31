/* The host's asynchronous signals held off (blocked on the calling thread,
 * then delivered as soon as it is restored) while capguard does, on the
 * host's thread, what a signal handler must not interrupt: a report
 * (dladdr, which takes the loader's lock; malloc; the stack walk). A handler
 * that calls exit() there found the loader's lock half released by the
 * frame it interrupted and hung in _dl_fini (2 of 3,000 runs), or corrupted
 * malloc's state and aborted (3 of 3,000). The disposition is never touched
 * and no signal is lost; faults (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS) stay unblocked, since a blocked fault kills the process. Only the
 * cold paths hold: never a call's fast path. */
#ifndef CAPGUARD_SIGNALS_HELD_H
#define CAPGUARD_SIGNALS_HELD_H

#include <signal.h>
#include <stdbool.h>

typedef struct {
  sigset_t old;
  bool held;
  bool outermost; /* the thread's first hold: its old mask is the host's */
} cg_signals;

void cg_signals_hold(cg_signals *s);
void cg_signals_release(cg_signals *s);
/* While this thread holds (between the outermost hold and its release):
 * the host's mask from before; else NULL. A write made then needs no mask
 * of its own (cg_write_whole_held): SIGXFSZ and SIGPIPE are held. */
const sigset_t *cg_signals_host_mask(void);

#endif
