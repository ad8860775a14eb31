/* Internal to detect/: opening, locking and mapping the priming file safely.
 * Shared by prime_file.c (load, rewrite, verify) and prime_append.c. */
#ifndef CAPGUARD_PRIME_IO_H
#define CAPGUARD_PRIME_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "capguard/clock.h"
#include "prime_format.h"

/* Opens path, never through a symlink, and checks it is a regular file we
 * own that nobody else may write. With create, a missing file is made (0600,
 * directories 0700). Returns fd, -1 refused (warned), -2 missing (only
 * without create). st gets the file's fstat. */
int prime_open_checked(const char *path, bool create, struct stat *st, cg_prime_warn_fn warn, void *ctx);

/* Opens path and takes flock(op) on it (LOCK_SH or LOCK_EX), reopening if a
 * rewrite replaced the file meanwhile. Waits as long as the file keeps
 * changing (others' work is queued and moving); gives up, with a warning
 * that says why, when it has not changed for a while. Returns fd (st its
 * fstat under the lock), -1 refused or gave up (warned), -2 missing (only
 * without create). */
int prime_open_locked(const char *path, bool create, int op, struct stat *st, cg_prime_warn_fn warn, void *ctx);

/* The same without waiting: -3 (nothing said) when another process holds a
 * conflicting lock, for work that can as well be done later. */
int prime_open_locked_nowait(const char *path, bool create, int op, struct stat *st, cg_prime_warn_fn warn,
                             void *ctx);

/* A read-only shared mapping of len bytes of fd (NULL for 0 bytes). 0, or -1
 * warned. */
int prime_map(int fd, size_t len, uint8_t **map, const char *path, cg_prime_warn_fn warn, void *ctx);

/* The file's first len bytes as the appender reads them (prime_view.c):
 * anonymous memory filled by pread where asked, so that a file rewritten in
 * place meanwhile reads as zeros, never a SIGBUS. buf is NULL for 0 bytes;
 * open returns 0, or -1 warned. */
typedef struct {
  uint8_t *buf;
  size_t len;
  int fd;
} prime_view;
int prime_view_open(prime_view *v, int fd, size_t len, const char *path, cg_prime_warn_fn warn, void *ctx);
/* Reads [off, off + n) of the file into the view (clipped to len). */
void prime_view_fill(const prime_view *v, uint64_t off, uint64_t n);
void prime_view_close(prime_view *v);

/* -1 with a warning for headers nobody may touch (foreign, newer, damaged);
 * 0 for OK, empty, torn. */
int prime_refuse_header(const uint8_t *buf, size_t len, const char *path, cg_prime_warn_fn warn, void *ctx);

int prime_write_at(int fd, const uint8_t *p, size_t n, uint64_t off);

/* r is an image record a writer may store: sizes in range, names match their
 * count, hash matches the bytes. */
bool prime_record_ok(const cg_prime_record *r);

#endif
