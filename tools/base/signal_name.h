/* A signal's name as people write it ("SIGKILL"), for the lines that say a
 * process died of one: the number alone (9) is read by few. */
#ifndef CAPGUARD_SIGNAL_NAME_H
#define CAPGUARD_SIGNAL_NAME_H

/* "SIGKILL" for 9; NULL for a number without a standard name (real-time signals). */
const char *cg_signal_name(int sig);

#endif
