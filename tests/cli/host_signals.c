/* Hosts that check capguard leaves their signals alone, over the fake
 * driver (found as libcuda.so.1 through LD_LIBRARY_PATH):
 *   host_signals quiet
 *       never writes to stderr itself (its stderr may be a pipe whose reader
 *       has gone); one capture broken by cuMemAlloc (capguard reports it on
 *       stderr, or with CAPGUARD_QUIET=1 says its summary there at exit);
 *       then checks SIGPIPE is as it was (default action, not blocked, not
 *       pending), says "host: SIGPIPE as it was" on stdout and exits 0;
 *   host_signals pending
 *       the same with SIGPIPE blocked and one already pending (raised by the
 *       host itself before its CUDA work): after it, SIGPIPE must still be
 *       pending and blocked ("host: its SIGPIPE still pending");
 *   host_signals exit-in-handler USEC
 *       a SIGALRM handler that calls exit(0), armed to fire after USEC
 *       microseconds while the host captures, allocates in captures (broken,
 *       reported) and ends them in a loop: the process must exit 0, never
 *       hang in capguard's exit.
 * Exit: 0, 1 when a check or a driver call failed (said on stdout), 2 usage. */
#include <cuda.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "broken_capture.h"
#include "driver_open.h"

static int sigpipe_state(int *blocked, int *pending) {
  struct sigaction sa;
  sigset_t mask, pend;
  sigaction(SIGPIPE, NULL, &sa);
  sigprocmask(SIG_BLOCK, NULL, &mask);
  sigpending(&pend);
  *blocked = sigismember(&mask, SIGPIPE);
  *pending = sigismember(&pend, SIGPIPE);
  return sa.sa_handler == SIG_DFL && !(sa.sa_flags & SA_SIGINFO);
}

static int quiet(CUstream s) {
  tk_broken_capture(s);
  tk_broken_capture(s);
  int blocked, pending, dfl = sigpipe_state(&blocked, &pending);
  if (!dfl || blocked || pending) {
    printf("host: SIGPIPE changed: default %d, blocked %d, pending %d\n", dfl, blocked, pending);
    return 1;
  }
  printf("host: SIGPIPE as it was\n");
  fflush(stdout);
  return 0; /* capguard's summary comes after this, at exit */
}

static int pending(CUstream s) {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigprocmask(SIG_BLOCK, &pipe, NULL);
  raise(SIGPIPE);
  tk_broken_capture(s);
  tk_broken_capture(s);
  int blocked, pend, dfl = sigpipe_state(&blocked, &pend);
  if (!dfl || !blocked || !pend) {
    printf("host: SIGPIPE changed: default %d, blocked %d, pending %d\n", dfl, blocked, pend);
    return 1;
  }
  int sig = 0;
  if (sigwait(&pipe, &sig) != 0 || sig != SIGPIPE) {
    printf("host: its pending SIGPIPE could not be taken\n");
    return 1;
  }
  printf("host: its SIGPIPE still pending\n");
  return 0;
}

static void on_alarm(int sig) {
  (void)sig;
  exit(0); /* not async-signal-safe, and programs do it: capguard's exit must not hang */
}

static _Noreturn void exit_in_handler(CUstream s, long usec) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval t = {{0, 0}, {usec / 1000000, usec % 1000000}};
  setitimer(ITIMER_REAL, &t, NULL);
  for (;;)
    tk_broken_capture(s);
}

int main(int argc, char **argv) {
  if (argc < 2)
    goto usage;
  if (tk_driver_open("host_signals") != 0)
    return 1;
  CUstream s;
  CUresult r = tk_driver_setup(&s);
  if (r) {
    printf("host_signals: driver set-up failed (CUresult %d)\n", (int)r);
    return 1;
  }
  if (!strcmp(argv[1], "quiet"))
    return quiet(s);
  if (!strcmp(argv[1], "pending"))
    return pending(s);
  if (!strcmp(argv[1], "exit-in-handler") && argc == 3)
    exit_in_handler(s, atol(argv[2]));
usage:
  fprintf(stderr, "usage: host_signals quiet | pending | exit-in-handler USEC\n");
  return 2;
}
