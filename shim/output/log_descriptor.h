/* The log's descriptor, proven capguard's before each write. A host may
 * close every descriptor from 3 up (closefrom, a daemon's close loop) and
 * open its own file, which then gets the number capguard's log had: a
 * write by number alone would land in the host's file. */
#ifndef CAPGUARD_LOG_DESCRIPTOR_H
#define CAPGUARD_LOG_DESCRIPTOR_H

#include <stdbool.h>
#include <stddef.h>

/* Opens path under the log's rules (capguard/log_file.h) and keeps its
 * device and inode, and the path for reopening. 0, or -1 with why said. */
int cg_log_fd_open(const char *path, char *why, size_t cap);
/* Whether there is a log (opened, and not given up on). */
bool cg_log_fd_kept(void);
/* The descriptor to write to: still the file capguard opened (fstat's
 * device and inode), else the path opened again under the same rules (one
 * line says so, the first time), else -1 from then on (one line says why). */
int cg_log_fd(void);
/* A forked child that writes a log of its own (%p): the parent's
 * descriptor closed, only if it is still capguard's. */
void cg_log_fd_close(void);
/* A forked child: the reopening lock, which another of the parent's
 * threads may have held at the fork, is free. */
void cg_log_fd_atfork_child(void);

#endif
