/* capguard run as a container's PID 1 (ENTRYPOINT ["capguard", "run", "--"]),
 * or anywhere: it reaps every child, as tini and dumb-init do. */
#ifndef CAPGUARD_REAP_H
#define CAPGUARD_REAP_H

#include <sys/types.h>

/* Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER):
 * an orphaned helper of the command is reparented here, not to init, and
 * reaped here. PID 1 is its namespace's reaper already. Sets SIGCHLD's
 * disposition back to the default (an inherited SIG_IGN would let the kernel
 * reap the command before its status is read), for the command too. */
void cg_reap_adopt_orphans(void);

/* Waits for pid and stores its status; every other child that ends
 * meanwhile (an adopted orphan) is reaped and forgotten. 0, or -1 with errno
 * (never EINTR). */
int cg_reap_wait_for(pid_t pid, int *status);

/* Reaps the children that have already ended, without waiting. */
void cg_reap_ended(void);

#endif
