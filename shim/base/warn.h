/* capguard's one-line warnings on stderr. Its own file because every other
 * part of the shim says things (config, driver, policy, priming, output):
 * kept here, no file has to call back into another to speak. */
#ifndef CAPGUARD_WARN_H
#define CAPGUARD_WARN_H

#include <stddef.h>

/* "capguard: " and the message, control characters as \xNN, one write(2). */
void cg_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An allocation of capguard's own failed: the call in hand passes through to
 * the driver as if capguard were not there; said once per process. */
void cg_warn_oom(const char *what);
/* After fork: the child has said nothing yet. */
void cg_warn_atfork_child(void);
/* write(2) until all of buf is written or it fails: 0, or the errno of the
 * write that failed (ENOSPC for a write of 0 bytes); *written (if given)
 * says how much left. */
int cg_write_all(int fd, const char *buf, size_t len, size_t *written);

#endif
