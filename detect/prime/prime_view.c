/* The priming file as the appender reads it (prime_io.h: prime_view). Not a
 * mapping of the file: an operator may rewrite it in place without taking
 * its lock ('cp new file', 'truncate'), and a mapping's pages past the new
 * end fault with SIGBUS in the host. The view is anonymous memory as long
 * as the file was, filled with pread where asked: untouched pages cost
 * nothing, so an append still costs what it reads (the header, what others
 * appended since, the image it compares), not the file. Where the file has
 * shrunk, the view reads zeros: a torn tail or a mismatch, never a fault. */
#include "prime_io.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int prime_view_open(prime_view *v, int fd, size_t len, const char *path, cg_prime_warn_fn warn, void *ctx) {
  v->fd = fd;
  v->len = len;
  v->buf = NULL;
  if (!len) return 0;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    prime_warnf(warn, ctx, path, "cannot make room for its %zu bytes (%s); not used", len, strerror(errno));
    return -1;
  }
  v->buf = m;
  return 0;
}

void prime_view_fill(const prime_view *v, uint64_t off, uint64_t n) {
  if (off >= v->len) return;
  if (n > v->len - off) n = v->len - off;
  uint64_t done = 0;
  while (done < n) {
    ssize_t got = pread(v->fd, v->buf + off + done, (size_t)(n - done), (off_t)(off + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return; /* the file is shorter now: zeros stay */
    done += (uint64_t)got;
  }
}

void prime_view_close(prime_view *v) {
  if (v->buf) munmap(v->buf, v->len);
  v->buf = NULL;
}
