/* capguard's own writes to files (log lines, priming records, stderr) inside
 * someone else's process: a file-size limit (ulimit -f) must never kill the
 * host with SIGXFSZ, nor change what the host's own writes get. */
#ifndef CAPGUARD_WRITE_WHOLE_H
#define CAPGUARD_WRITE_WHOLE_H

#include <stddef.h>
#include <stdint.h>

/* Writes len bytes of buf to fd: with pwrite at off, or with write (at the
 * descriptor's position, the end for O_APPEND) when off is negative.
 * Retries EINTR and short writes. A SIGXFSZ the write raises is kept from
 * the host (see write_whole.c); the host's disposition, mask and any
 * SIGXFSZ of its own are left as they were. Returns 0, or the errno of the
 * failure (EFBIG past the limit, ENOSPC, EIO...); *done (may be NULL) gets
 * the bytes that were written. */
int cg_write_whole(int fd, const void *buf, size_t len, int64_t off, size_t *done);

/* Appends one line (or record) to an O_APPEND descriptor, whole or not at
 * all: when the write stops part way (a full disk, the size limit), what it
 * wrote is cut off again, if nothing was appended after it. Returns 0, or
 * the errno; *torn is set when a part could not be taken back. */
int cg_append_whole(int fd, const void *buf, size_t len, int *torn);

#endif
