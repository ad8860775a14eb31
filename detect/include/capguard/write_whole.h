/* capguard's own writes to files (log lines, priming records, stderr) inside
 * someone else's process: a file-size limit (ulimit -f) must never kill the
 * host with SIGXFSZ, nor a pipe whose reader has gone (stderr to a dead log
 * collector) with SIGPIPE, nor change what the host's own writes get. */
#ifndef CAPGUARD_WRITE_WHOLE_H
#define CAPGUARD_WRITE_WHOLE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Writes len bytes of buf to fd: with pwrite at off, or with write (at the
 * descriptor's position, the end for O_APPEND) when off is negative.
 * Retries EINTR and short writes. A SIGXFSZ or SIGPIPE the write raises is
 * kept from the host (see write_whole.c); the host's disposition, mask and
 * any such signal of its own are left as they were. Returns 0, or the errno
 * of the failure (EFBIG past the limit, EPIPE, ENOSPC, EIO...); *done (may be NULL) gets
 * the bytes that were written. */
int cg_write_whole(int fd, const void *buf, size_t len, int64_t off, size_t *done);

/* The same, by a thread that holds SIGXFSZ and SIGPIPE blocked already
 * (the shim's reports hold every asynchronous signal: signals_held.h);
 * host_mask: its mask before it blocked them. No mask is set here, and
 * what was pending is asked only when host_mask blocks one of the two
 * (write_whole.c says why that is enough): a log line costs its write. */
int cg_write_whole_held(int fd, const void *buf, size_t len, int64_t off, size_t *done,
                        const sigset_t *host_mask);

/* Appends one line (or record) to an O_APPEND descriptor, whole or not at
 * all: when the write stops part way (a full disk, the size limit), what it
 * wrote is cut off again, if nothing was appended after it. Returns 0, or
 * the errno; *torn is set when a part could not be taken back. */
int cg_append_whole(int fd, const void *buf, size_t len, int *torn);
/* The same, held as cg_write_whole_held. */
int cg_append_whole_held(int fd, const void *buf, size_t len, int *torn, const sigset_t *host_mask);

#endif
