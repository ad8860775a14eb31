/* The priming file on disk: where it lives, loading (mapped, not copied),
 * atomic rewrites, verification. Opening, locking and mapping are in
 * prime_io.c, appending in prime_append.c, the byte format in
 * prime_format.c; docs/priming-format.md explains them. This code runs inside
 * the user's process via the shim: every failure is one warning and a -1. */
#include "prime_io.h"
#include "capguard/path_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- default path ---- */

/* By hand, not snprintf (nor strlen and memcpy): the shim's constructor
 * makes this path, and each glibc function it calls first there is bound
 * then (snprintf's cost every process's start-up about 1.5k instructions). */
static void put_path(char *buf, size_t cap, size_t *n, const char *s) {
  for (; *s; s++, (*n)++)
    if (*n + 1 < cap)
      buf[*n] = *s;
}

int cg_prime_default_path(const char *prime, const char *xdg_cache_home, const char *home,
                          char *buf, size_t cap) {
  size_t n = 0;
  if (prime && *prime) {
    put_path(buf, cap, &n, prime);
  } else if (xdg_cache_home && xdg_cache_home[0] == '/') {
    /* The XDG spec says a relative XDG_CACHE_HOME is invalid and to be ignored. */
    put_path(buf, cap, &n, xdg_cache_home);
    put_path(buf, cap, &n, "/capguard/prime.cgp");
  } else if (home && *home) {
    put_path(buf, cap, &n, home);
    put_path(buf, cap, &n, "/.cache/capguard/prime.cgp");
  } else {
    return -1;
  }
  if (cap)
    buf[n < cap ? n : cap - 1] = '\0';
  return n >= cap ? -1 : 0;
}

int cg_prime_parse_memory(const void *data, size_t len, const char *name, cg_prime_set **out,
                          cg_prime_warn_fn warn, void *ctx) {
  *out = NULL;
  if (prime_refuse_header(data, len, name, warn, ctx)) return -1;
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy) {
    prime_warnf(warn, ctx, name, "out of memory; nothing loaded");
    return -1;
  }
  if (len) memcpy(copy, data, len);
  return prime_parse_owned(copy, len, false, name, false, out, warn, ctx);
}

/* Opens, locks and maps path for reading (write: under the exclusive lock,
 * creating it). *fd -1 and no map for a missing file without write. A file
 * larger than max_read is not mapped: -3, with its size in *len. */
static int open_mapped(const char *path, bool write, uint64_t max_read, int *fd_out, uint8_t **map,
                       size_t *len, struct stat *st, cg_prime_warn_fn warn, void *ctx) {
  *fd_out = -1;
  *map = NULL;
  *len = 0;
  int fd = prime_open_locked(path, write, write ? LOCK_EX : LOCK_SH, st, warn, ctx);
  if (fd == -2) return 0;
  if (fd < 0) return -1;
  *len = (size_t)st->st_size;
  if ((uint64_t)st->st_size > max_read) {
    close(fd);
    return -3;
  }
  if (prime_map(fd, *len, map, path, warn, ctx) || prime_refuse_header(*map, *len, path, warn, ctx)) {
    if (*map) munmap(*map, *len);
    *map = NULL;
    close(fd);
    return -1;
  }
  *fd_out = fd;
  return 0;
}

/* The file is mapped, not copied: pages are shared with every other process
 * using it, and once walked, handed back (prime_parse_owned); what stays
 * resident is what a process touches afterwards. Records point into the
 * mapping, which stays valid after the descriptor closes. A truncation can
 * only remove a torn tail after the last intact record, which no record
 * points into. */
int cg_prime_load(const char *path, cg_prime_set **out, cg_prime_warn_fn warn, void *ctx) {
  *out = NULL;
  int fd;
  uint8_t *map;
  size_t len;
  struct stat st;
  if (open_mapped(path, false, UINT64_MAX, &fd, &map, &len, &st, warn, ctx) != 0) return -1;
  if (fd < 0) return prime_parse_owned(NULL, 0, false, path, false, out, warn, ctx);
  /* The mapping holds the open file (and so its flock) past close: unlock
   * explicitly, or this process would block every writer for its lifetime. */
  flock(fd, LOCK_UN);
  close(fd);
  int rc = prime_parse_owned(map, len, map != NULL, path, false, out, warn, ctx);
  if (rc == 0) {
    (*out)->dev = (uint64_t)st.st_dev;
    (*out)->ino = (uint64_t)st.st_ino;
  }
  return rc;
}

/* ---- atomic rewrite ---- */

/* Write header and records to a new file beside path, fsync it, rename it
 * over path and fsync the directory. The fsync matters here, unlike in
 * append: without it a crash after the rename can leave an empty file in
 * place of every record the user had. */
static int replace_file(const char *path, const cg_prime_record *recs, size_t n, const cg_prime_identity *id,
                        cg_prime_warn_fn warn, void *ctx) {
  char tmp[PATH_MAX];
  int len = snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
  if (len < 0 || (size_t)len >= sizeof tmp) {
    prime_warnf(warn, ctx, path, "path too long; not rewritten");
    return -1;
  }
  int fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT|O_EXCL, mode 0600 */
  if (fd < 0) {
    prime_warnf(warn, ctx, path, "cannot create a temporary file beside it (%s); not rewritten",
                strerror(errno));
    return -1;
  }
  uint8_t hdr[CG_PRIME_HEADER_BYTES];
  unsigned version = PRIME_VERSION_PLAIN; /* 2 only when a record needs it */
  for (size_t i = 0; i < n; i++)
    if (prime_version_for(&recs[i]) > version) version = prime_version_for(&recs[i]);
  prime_encode_header(hdr, cg_now_ns(), version);
  uint64_t off = 0;
  int rc = prime_write_at(fd, hdr, sizeof hdr, off);
  off += sizeof hdr;
  if (rc == 0 && id) { /* first, so that a reader of the head alone knows what the file is for */
    uint8_t idrec[PRIME_IDENTITY_FIXED + CG_PRIME_PROGRAM_MAX + CG_PRIME_LABEL_MAX + 8];
    uint64_t l = prime_identity_len(id);
    prime_encode_identity(idrec, id);
    rc = prime_write_at(fd, idrec, l, off);
    off += l;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    uint64_t l = prime_image_len(&recs[i]);
    bool loads_rec = prime_needs_loads_record(&recs[i]);
    uint8_t *b = malloc(l + PRIME_LOADS_LEN);
    rc = b ? 0 : -1;
    if (b) {
      prime_encode_image(b, &recs[i]);
      if (loads_rec) {
        uint32_t m, lib;
        prime_effective_loads(&recs[i], &m, &lib);
        prime_encode_loads(b + l, off, recs[i].hash, m, lib, recs[i].last_ns);
      }
      rc = prime_write_at(fd, b, l + (loads_rec ? PRIME_LOADS_LEN : 0), off);
      off += l + (loads_rec ? PRIME_LOADS_LEN : 0);
      free(b);
    }
  }
  if (rc == 0) rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc == 0 && rename(tmp, path) != 0) {
    rc = -1;
    err = errno;
  }
  if (rc != 0) {
    unlink(tmp);
    prime_warnf(warn, ctx, path, "rewrite failed (%s); the file is as it was", strerror(err));
    return -1;
  }
  char dir[PATH_MAX];
  cg_path_dir(path, dir, sizeof dir);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return 0;
}

static int rewrite_with(const char *path, cg_prime_select_fn select, void *sctx,
                        const cg_prime_set *const *add, size_t n_add,
                        const cg_prime_record *extra, size_t n_extra, const cg_prime_identity *id,
                        cg_prime_warn_fn warn, void *wctx) {
  int fd;
  uint8_t *buf;
  size_t len;
  struct stat st;
  if (open_mapped(path, true, UINT64_MAX, &fd, &buf, &len, &st, warn, wctx) != 0) return -1;
  int rc = -1;
  cg_prime_set *cur = NULL;
  bool *keep = NULL;
  cg_prime_record *list = NULL;
  if (prime_parse_owned(buf, len, buf != NULL, path, false, &cur, warn, wctx) != 0) goto out;
  size_t total = cur->n + n_extra;
  for (size_t i = 0; i < n_add; i++) total += cg_prime_count(add[i]);
  keep = malloc((cur->n ? cur->n : 1) * sizeof *keep);
  list = malloc((total ? total : 1) * sizeof *list);
  if (!keep || !list) {
    prime_warnf(warn, wctx, path, "out of memory; not rewritten");
    goto out;
  }
  for (size_t i = 0; i < cur->n; i++) keep[i] = true;
  if (select && select(sctx, cur, keep) != 0) goto out;
  size_t n = 0;
  for (size_t i = 0; i < cur->n; i++)
    if (keep[i]) list[n++] = cur->recs[i];
  for (size_t i = 0; i < n_add; i++)
    for (size_t j = 0; j < cg_prime_count(add[i]); j++) list[n++] = *cg_prime_get(add[i], j);
  for (size_t i = 0; i < n_extra; i++) list[n++] = extra[i];
  n = prime_fold_dups(list, NULL, n);
  if (n == (size_t)-1) {
    prime_warnf(warn, wctx, path, "out of memory; not rewritten");
    goto out;
  }
  /* The identity asked for, else the file's own, else the first added file's. */
  for (size_t i = 0; !id && i <= n_add; i++)
    id = cg_prime_identity_of(i ? add[i - 1] : cur);
  rc = replace_file(path, list, n, id, warn, wctx);
out:
  /* The lock is dropped only now, after the rename: a writer that waited on
   * the old file sees it is no longer at path and reopens. (Unlocked
   * explicitly: the mapping of cur holds the open file past close.) */
  flock(fd, LOCK_UN);
  close(fd);
  free(list);
  free(keep);
  cg_prime_free(cur);
  return rc;
}

int cg_prime_rewrite(const char *path, cg_prime_select_fn select, void *sctx,
                     const cg_prime_set *const *add, size_t n_add,
                     cg_prime_warn_fn warn, void *wctx) {
  return rewrite_with(path, select, sctx, add, n_add, NULL, 0, NULL, warn, wctx);
}

int cg_prime_add_records(const char *path, const cg_prime_record *recs, size_t n,
                         cg_prime_warn_fn warn, void *ctx) {
  for (size_t i = 0; i < n; i++)
    if (!prime_record_ok(&recs[i])) {
      prime_warnf(warn, ctx, path, "record %zu is inconsistent (hash, size or kernel names); not written", i);
      return -1;
    }
  return rewrite_with(path, NULL, NULL, NULL, 0, recs, n, NULL, warn, ctx);
}

int cg_prime_set_identity(const char *path, const cg_prime_identity *id, cg_prime_warn_fn warn, void *ctx) {
  return rewrite_with(path, NULL, NULL, NULL, 0, NULL, 0, id, warn, ctx);
}

/* ---- verify ---- */

typedef struct {
  cg_prime_walk_fn each;
  cg_prime_progress_fn progress;
  void *ctx;
  uint64_t len;
  size_t bad;
} verify_ctx;

static void verify_each(void *vctx, const cg_prime_walk_entry *e, const uint8_t *rec) {
  (void)rec;
  verify_ctx *v = vctx;
  v->bad += e->state != CG_PRIME_REC_OK;
  if (v->each) v->each(v->ctx, e);
}

int cg_prime_verify(const char *path, cg_prime_walk_fn each, cg_prime_progress_fn progress,
                    void *ctx, cg_prime_warn_fn warn, void *wctx) {
  int fd;
  uint8_t *buf;
  size_t len;
  struct stat st;
  if (open_mapped(path, false, UINT64_MAX, &fd, &buf, &len, &st, warn, wctx) != 0) return -1;
  if (fd < 0) {
    prime_warnf(warn, wctx, path, "does not exist; nothing to verify");
    return -1;
  }
  verify_ctx v = {each, progress, ctx, len, 0};
  unsigned version;
  if (prime_check_header(buf, len, &version) == PRIME_HDR_TORN) {
    cg_prime_walk_entry e = {0, len, CG_PRIME_REC_TORN, 0, "incomplete file header"};
    verify_each(&v, &e, NULL);
  } else if (len) {
    prime_walk(buf, len, 0, verify_each, &v, progress, ctx);
  }
  if (buf) munmap(buf, len);
  close(fd); /* the shared lock is held for the walk, and dropped with the last reference */
  return v.bad ? 1 : 0;
}
