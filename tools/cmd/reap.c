/* Reaping for capguard run. As PID 1 of a container every orphan in it is
 * reparented to capguard; without reaping, each left a zombie (200 orphaned
 * helpers, 200 zombies, until the PID table filled). Elsewhere capguard is
 * made the subreaper so that the command's tree behaves the same, inside a
 * container or not. Like tini: the command's status is the one reported;
 * descendants still running when it ends are not waited for. */
#include "reap.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

void cg_reap_adopt_orphans(void) {
  /* Fails only on kernels before 3.4: orphans then go to init, as before. */
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  /* SIGCHLD ignored (or SA_NOCLDWAIT), inherited from a parent that set it:
   * the kernel then reaps every child itself and waitpid finds none, so the
   * command's status would be lost. The default disposition, here and so in
   * the command, which inherits it across fork and exec. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  (void)sigaction(SIGCHLD, &dfl, NULL);
}

int cg_reap_wait_for(pid_t pid, int *status) {
  for (;;) {
    int st = 0;
    pid_t w = waitpid(-1, &st, 0);
    if (w == pid) {
      *status = st;
      return 0;
    }
    if (w < 0 && errno != EINTR)
      return -1;
  }
}

void cg_reap_ended(void) {
  int st;
  while (waitpid(-1, &st, WNOHANG) > 0) {
  }
}
