/* A priming file read into the process's own memory, for the shim
 * (capguard/prime_file.h: cg_prime_load_copy, cg_prime_keep_only). A
 * mapping of the file is not the process's: an operator who rewrites the
 * file in place (': > file', 'cp new file', 'truncate') takes its pages
 * away, and the next touch of a record's bytes (finding a served image,
 * loading a refill) kills the host with SIGBUS. So the shim reads the file
 * with pread, once, under the shared lock, and after its preload keeps
 * only the bytes it can still use (the images that fit its device). */
#include "prime_io.h"

#include "capguard/load_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* len bytes of fd from 0, fewer when the file shrank meanwhile (a torn
 * tail the parse skips). NULL, said why, on a read error or no memory. */
static uint8_t *read_all(int fd, size_t *len, const char *path, cg_prime_warn_fn warn, void *ctx) {
  uint8_t *buf = malloc(*len ? *len : 1);
  if (!buf) {
    prime_warnf(warn, ctx, path, "out of memory reading its %zu bytes; nothing loaded", *len);
    return NULL;
  }
  size_t got = 0;
  while (got < *len) {
    ssize_t n = pread(fd, buf + got, *len - got, (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      prime_warnf(warn, ctx, path, "cannot read it (%s); nothing loaded", strerror(errno));
      free(buf);
      return NULL;
    }
    if (n == 0) break;
    got += (size_t)n;
  }
  *len = got;
  return buf;
}

int cg_prime_load_copy(const char *path, cg_prime_set **out, cg_prime_warn_fn warn, void *ctx) {
  *out = NULL;
  struct stat st;
  int fd = prime_open_locked(path, false, LOCK_SH, &st, warn, ctx);
  if (fd == -2) return prime_parse_owned(NULL, 0, false, path, false, out, warn, ctx);
  if (fd < 0) return -1;
  size_t len = (size_t)st.st_size;
  uint8_t *buf = read_all(fd, &len, path, warn, ctx);
  close(fd); /* drops the shared lock: nothing of the file is used after this */
  if (!buf) return -1;
  if (prime_refuse_header(buf, len, path, warn, ctx)) {
    free(buf);
    return -1;
  }
  int rc = prime_parse_owned(buf, len, false, path, false, out, warn, ctx);
  if (rc == 0) {
    (*out)->dev = (uint64_t)st.st_dev;
    (*out)->ino = (uint64_t)st.st_ino;
  }
  return rc;
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

int cg_prime_keep_only(cg_prime_set *s, bool (*keep)(const cg_prime_record *r, void *ctx), void *ctx) {
  if (!s || !s->buf) return 0;
  size_t need = 0;
  for (size_t i = 0; i < s->n; i++) {
    const cg_prime_record *r = &s->recs[i];
    need += pad8(r->names_len) + (size_t)r->n_options * CG_LOAD_OPT_BYTES +
            (r->bytes && keep(r, ctx) ? pad8((size_t)r->size) : 0);
  }
  uint8_t *kept = malloc(need ? need : 1);
  if (!kept) return -1;
  size_t at = 0;
  for (size_t i = 0; i < s->n; i++) {
    cg_prime_record *r = &s->recs[i];
    if (r->names_len) {
      memcpy(kept + at, r->kernel_names, r->names_len);
      r->kernel_names = (const char *)kept + at;
      at += pad8(r->names_len);
    }
    if (r->n_options) {
      memcpy(kept + at, r->options, (size_t)r->n_options * CG_LOAD_OPT_BYTES);
      r->options = kept + at;
      at += (size_t)r->n_options * CG_LOAD_OPT_BYTES;
    }
    if (r->bytes && keep(r, ctx)) {
      memcpy(kept + at, r->bytes, (size_t)r->size);
      r->bytes = kept + at;
      at += pad8((size_t)r->size);
    } else {
      r->bytes = NULL; /* never found, never loaded again */
    }
  }
  if (s->mapped) munmap(s->buf, s->len);
  else free(s->buf);
  s->buf = kept; /* len stays the file's: the appender's seed reads it */
  s->mapped = false;
  return 0;
}
