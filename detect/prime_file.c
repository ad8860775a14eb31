/* The priming file on disk: where it lives, who may own it, locking between
 * processes, appending, atomic rewrites, verification. The byte format is in
 * prime_format.c; docs/priming-format.md explains both. This code runs inside
 * the user's process via the shim: every failure is one warning and a -1,
 * waits are bounded, allocations are bounded by the file's size. */
#include "prime_format.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long to wait for another process's lock before giving up with a warning:
 * holders keep it for one read and one write, so this is only reached when a
 * holder is stopped or hung, and then we would rather skip than hang. */
#define LOCK_TIMEOUT_MS 10000
#define REOPEN_TRIES 16 /* open_checked: the path kept changing between open and create */

static uint64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static uint64_t now_ns(void) { return clock_ns(CLOCK_REALTIME); }

/* ---- default path ---- */

int cg_prime_default_path(char *buf, size_t cap) {
  const char *p = getenv("CAPGUARD_PRIME");
  int n;
  if (p && *p) {
    n = snprintf(buf, cap, "%s", p);
  } else if ((p = getenv("XDG_CACHE_HOME")) && p[0] == '/') {
    /* The XDG spec says a relative XDG_CACHE_HOME is invalid and to be ignored. */
    n = snprintf(buf, cap, "%s/capguard/prime.cgp", p);
  } else if ((p = getenv("HOME")) && *p) {
    n = snprintf(buf, cap, "%s/.cache/capguard/prime.cgp", p);
  } else {
    return -1;
  }
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- opening safely ---- */

/* 0 if fd is a regular file we own and nobody else may write; else warns. */
static int check_owner(int fd, const char *path, cg_prime_warn_fn warn, void *ctx) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    prime_warnf(warn, ctx, path, "cannot stat it (%s); not used", strerror(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    prime_warnf(warn, ctx, path, "not a regular file; not used: set CAPGUARD_PRIME to a file path");
    return -1;
  }
  if (st.st_uid != geteuid()) {
    prime_warnf(warn, ctx, path,
                "owned by uid %u, not by you (uid %u); not used: remove it or set CAPGUARD_PRIME "
                "to a file of your own", (unsigned)st.st_uid, (unsigned)geteuid());
    return -1;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    prime_warnf(warn, ctx, path,
                "writable by group or others (mode %03o); not used: run 'chmod go-w %s'",
                (unsigned)(st.st_mode & 0777), path);
    return -1;
  }
  return 0;
}

static void warn_open(const char *path, int err, bool create, cg_prime_warn_fn warn, void *ctx) {
  if (create && (err == EACCES || err == EROFS || err == EPERM))
    /* Only the append opens for writing: a read-only file was still read and served. */
    prime_warnf(warn, ctx, path, "cannot open it for writing (%s); nothing more recorded, what it holds is still used",
                strerror(err));
  else if (err == ELOOP || err == EMLINK)
    prime_warnf(warn, ctx, path,
                "is a symbolic link, which capguard does not follow; not used: replace it with "
                "the file itself or set CAPGUARD_PRIME to the real path");
  else
    prime_warnf(warn, ctx, path, "cannot open it (%s); not used", strerror(err));
}

/* mkdir -p of path's directory, new levels mode 0700. */
static int make_parent(const char *path) {
  char dir[PATH_MAX];
  int n = snprintf(dir, sizeof dir, "%s", path);
  if (n < 0 || (size_t)n >= sizeof dir) return -1;
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return 0;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(dir, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Opens path, never through a symlink, and checks it. O_NONBLOCK keeps a FIFO
 * planted at the path from blocking us before fstat sees what it is. With
 * create, a missing file is made (0600, O_EXCL so a racing creator or a
 * planted link makes us reopen instead). Returns fd, -1 refused (warned),
 * -2 missing (only without create). */
static int open_checked(const char *path, bool create, cg_prime_warn_fn warn, void *ctx) {
  int flags = (create ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
  for (int tries = 0; tries < REOPEN_TRIES; tries++) {
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT && create) {
      if (make_parent(path) != 0) {
        prime_warnf(warn, ctx, path, "cannot create its directory (%s); nothing recorded",
                    strerror(errno));
        return -1;
      }
      fd = open(path, flags | O_CREAT | O_EXCL, 0600);
      if (fd < 0 && errno == EEXIST) continue; /* someone else made it, or a link: look again */
    }
    if (fd < 0) {
      if (errno == ENOENT && !create) return -2;
      warn_open(path, errno, create, warn, ctx);
      return -1;
    }
    if (check_owner(fd, path, warn, ctx) != 0) {
      close(fd);
      return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
  }
  prime_warnf(warn, ctx, path, "it keeps appearing and disappearing; nothing recorded");
  return -1;
}

/* flock, waiting until deadline (CLOCK_MONOTONIC ns); see LOCK_TIMEOUT_MS.
 * Returns 0, -1 on error (warned), -2 when the deadline passed (not warned). */
static int lock_fd(int fd, int op, uint64_t deadline, const char *path, cg_prime_warn_fn warn,
                   void *ctx) {
  long nap_us = 100;
  while (flock(fd, op | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      prime_warnf(warn, ctx, path, "cannot lock it (%s); not used", strerror(errno));
      return -1;
    }
    if (clock_ns(CLOCK_MONOTONIC) >= deadline) return -2;
    struct timespec ts = {0, nap_us * 1000};
    nanosleep(&ts, NULL);
    if (nap_us < 5000) nap_us *= 2;
  }
  return 0;
}

/* After waiting for the lock: is fd still the file at path? A rewrite renames
 * a new file into place; appending to the old one would lose the record. */
static bool still_current(int fd, const char *path) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

/* Read all of fd into a new buffer (bounded by its size at fstat time). */
static int read_all(int fd, const char *path, uint8_t **buf, size_t *len,
                    cg_prime_progress_fn progress, void *pctx, cg_prime_warn_fn warn, void *ctx) {
  struct stat st;
  *buf = NULL;
  *len = 0;
  if (fstat(fd, &st) != 0) {
    prime_warnf(warn, ctx, path, "cannot stat it (%s); not used", strerror(errno));
    return -1;
  }
  if ((uint64_t)st.st_size > SIZE_MAX - 1) {
    prime_warnf(warn, ctx, path, "too large to read; not used: run 'capguard prime prune %s'", path);
    return -1;
  }
  size_t size = (size_t)st.st_size, got = 0;
  uint8_t *b = malloc(size ? size : 1);
  if (!b) {
    prime_warnf(warn, ctx, path, "out of memory reading its %zu bytes; not used", size);
    return -1;
  }
  while (got < size) {
    size_t want = size - got < (4u << 20) ? size - got : (4u << 20);
    ssize_t r = pread(fd, b + got, want, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      prime_warnf(warn, ctx, path, "read error (%s); not used", strerror(errno));
      free(b);
      return -1;
    }
    if (r == 0) break; /* shrank under us: what we have is what there is */
    got += (size_t)r;
    if (progress) progress(pctx, got, 2 * (uint64_t)size);
  }
  *buf = b;
  *len = got;
  return 0;
}

/* -1 with a warning for headers we must not touch; 0 for OK, empty, torn. */
static int refuse_header(const uint8_t *buf, size_t len, const char *path, cg_prime_warn_fn warn,
                         void *ctx) {
  unsigned version;
  switch (prime_check_header(buf, len, &version)) {
  case PRIME_HDR_FOREIGN:
    prime_warnf(warn, ctx, path,
                "not a capguard priming file; left untouched: set CAPGUARD_PRIME to another path");
    return -1;
  case PRIME_HDR_NEWER:
    prime_warnf(warn, ctx, path,
                "format version %u, written by a newer capguard (this one reads version %u); left "
                "untouched: upgrade capguard or set CAPGUARD_PRIME to another path",
                version, PRIME_VERSION);
    return -1;
  case PRIME_HDR_DAMAGED:
    prime_warnf(warn, ctx, path,
                "file header damaged; left untouched: move the file aside and capguard starts a "
                "new one");
    return -1;
  default:
    return 0;
  }
}

int cg_prime_parse_memory(const void *data, size_t len, const char *name, cg_prime_set **out,
                          cg_prime_warn_fn warn, void *ctx) {
  *out = NULL;
  if (refuse_header(data, len, name, warn, ctx)) return -1;
  uint8_t *copy = malloc(len ? len : 1);
  if (!copy) {
    prime_warnf(warn, ctx, name, "out of memory; nothing loaded");
    return -1;
  }
  if (len) memcpy(copy, data, len);
  return prime_parse_owned(copy, len, name, false, out, warn, ctx);
}

/* Opens, locks (shared or exclusive) and reads path. For a missing file
 * without create: *fd = -1 and an empty buffer. A file larger than max_read
 * is not read: -3, with its size in *len and nothing warned. */
static int open_locked(const char *path, bool write, uint64_t max_read, int *fd_out,
                       uint8_t **buf, size_t *len,
                       cg_prime_progress_fn progress, void *pctx, cg_prime_warn_fn warn,
                       void *ctx) {
  *fd_out = -1;
  *buf = NULL;
  *len = 0;
  /* One deadline for waiting on the lock and for reopening after rewrites
   * replaced the file meanwhile: either way, another process is busy with it. */
  uint64_t deadline = clock_ns(CLOCK_MONOTONIC) + (uint64_t)LOCK_TIMEOUT_MS * 1000000u;
  for (;;) {
    int fd = open_checked(path, write, warn, ctx);
    if (fd == -2) return 0;
    if (fd < 0) return -1;
    int rc = lock_fd(fd, write ? LOCK_EX : LOCK_SH, deadline, path, warn, ctx);
    if (rc == 0 && !still_current(fd, path)) rc = -2; /* replaced while we waited */
    if (rc != 0) {
      close(fd);
      if (rc == -1) return -1;
      if (clock_ns(CLOCK_MONOTONIC) < deadline) continue;
      prime_warnf(warn, ctx, path,
                  "another process has kept it locked or kept replacing it for %d s; skipped: "
                  "check for a hung capguard process", LOCK_TIMEOUT_MS / 1000);
      return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > max_read) {
      *len = (size_t)st.st_size;
      close(fd);
      return -3;
    }
    if (read_all(fd, path, buf, len, progress, pctx, warn, ctx) != 0 ||
        refuse_header(*buf, *len, path, warn, ctx) != 0) {
      free(*buf);
      *buf = NULL;
      close(fd);
      return -1;
    }
    *fd_out = fd;
    return 0;
  }
}

int cg_prime_load(const char *path, cg_prime_set **out, cg_prime_warn_fn warn, void *ctx) {
  *out = NULL;
  int fd;
  uint8_t *buf;
  size_t len;
  if (open_locked(path, false, UINT64_MAX, &fd, &buf, &len, NULL, NULL, warn, ctx) != 0)
    return -1;
  if (fd >= 0) close(fd); /* closing drops the shared lock */
  return prime_parse_owned(buf, len, path, false, out, warn, ctx);
}

/* ---- writing ---- */

static int write_at(int fd, const uint8_t *p, size_t n, uint64_t off) {
  while (n) {
    ssize_t w = pwrite(fd, p, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
    off += (uint64_t)w;
  }
  return 0;
}

static bool record_ok(const cg_prime_record *r) {
  if (!r || !r->bytes || r->size == 0 || r->size > CG_IMAGE_MAX_BYTES || r->kind > CG_IMAGE_PTX ||
      r->names_len > PRIME_MAX_NAMES || (r->names_len && !r->kernel_names))
    return false;
  uint32_t nuls = 0;
  for (uint32_t i = 0; i < r->names_len; i++) nuls += r->kernel_names[i] == 0;
  if (r->names_len && r->kernel_names[r->names_len - 1] != 0) return false;
  cg_hash128 h = prime_hash(r->bytes, r->size);
  return nuls == r->n_kernels && h.hi == r->hash.hi && h.lo == r->hash.lo;
}

int cg_prime_append(const char *path, const cg_prime_record *r, uint64_t max_bytes,
                    cg_prime_warn_fn warn, void *ctx) {
  if (!record_ok(r)) {
    prime_warnf(warn, ctx, path,
                "asked to record an inconsistent image (hash, size or kernel names); nothing "
                "recorded: this is a capguard bug, please report it");
    return -1;
  }
  int fd;
  uint8_t *buf;
  size_t len;
  /* A file already over the cap is not even read: the allocation stays
   * bounded by the cap inside the user's process. */
  int orc = open_locked(path, true, max_bytes, &fd, &buf, &len, NULL, NULL, warn, ctx);
  if (orc == -3)
    prime_warnf(warn, ctx, path,
                "already %zu bytes, over the %llu-byte cap; nothing recorded: raise "
                "CAPGUARD_PRIME_MAX or run 'capguard prime prune %s'",
                len, (unsigned long long)max_bytes, path);
  if (orc != 0) return -1;
  int rc = -1;
  cg_prime_set *s = NULL;
  uint8_t *rec = NULL;
  /* Quiet: damage was reported when the file was loaded; warning again on
   * every append would only repeat it. */
  if (prime_parse_owned(buf, len, path, true, &s, warn, ctx) != 0) goto out;

  uint64_t at = s->tail_off; /* truncate a torn tail: the new record goes where it began */
  bool need_header = at < CG_PRIME_HEADER_BYTES;
  if (need_header) at = 0;
  uint64_t hits = r->hits ? r->hits : 1, t = r->last_ns ? r->last_ns : now_ns();
  const cg_prime_record *have = cg_prime_find(s, r->bytes, r->size);
  uint64_t rec_len = have ? PRIME_HIT_LEN : prime_image_len(r->size, r->names_len);
  uint64_t total = (need_header ? CG_PRIME_HEADER_BYTES : 0) + rec_len;
  if (at + total > max_bytes) {
    prime_warnf(warn, ctx, path,
                "full (%llu of %llu bytes); %s of %llu bytes not recorded: raise "
                "CAPGUARD_PRIME_MAX or run 'capguard prime prune %s'",
                (unsigned long long)at, (unsigned long long)max_bytes,
                have ? "a hit for an image" : "an image", (unsigned long long)r->size, path);
    goto out;
  }
  rec = malloc(total);
  if (!rec) {
    prime_warnf(warn, ctx, path, "out of memory; nothing recorded");
    goto out;
  }
  if (need_header) prime_encode_header(rec, now_ns());
  uint8_t *body = rec + (need_header ? CG_PRIME_HEADER_BYTES : 0);
  if (have) {
    prime_encode_hit(body, s->offs[have - s->recs], have->hash, hits, t);
  } else {
    cg_prime_record copy = *r;
    copy.hits = hits;
    copy.last_ns = t;
    copy.first_ns = r->first_ns ? r->first_ns : t;
    prime_encode_image(body, &copy);
  }
  if (at < len) {
    if (ftruncate(fd, (off_t)at) != 0) {
      prime_warnf(warn, ctx, path, "cannot drop its incomplete last record (%s); nothing recorded",
                  strerror(errno));
      goto out;
    }
    if (s->n_bad)
      prime_warnf(warn, ctx, path, "dropped %llu bytes of an incomplete last record",
                  (unsigned long long)(len - at));
  }
  /* One pwrite of the whole record at the end, under the lock: readers see
   * all of it or a torn tail they skip. No fsync: this is a cache, a record
   * lost to a power cut costs one more warning on the next run, while an
   * fsync on every append would stall the user's process. */
  if (write_at(fd, rec, total, at) != 0) {
    int err = errno;
    if (ftruncate(fd, (off_t)at) != 0) { /* best effort: the walk skips a torn tail anyway */ }
    prime_warnf(warn, ctx, path, "write failed (%s); nothing recorded", strerror(err));
    goto out;
  }
  rc = 0;
out:
  free(rec);
  cg_prime_free(s);
  close(fd); /* drops the lock */
  return rc;
}

/* ---- atomic rewrite ---- */

/* Write header and records to a new file beside path, fsync it, rename it
 * over path and fsync the directory. The fsync matters here, unlike in
 * append: without it a crash after the rename can leave an empty file in
 * place of every record the user had. */
static int replace_file(const char *path, const cg_prime_record *recs, size_t n,
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
  prime_encode_header(hdr, now_ns());
  uint64_t off = 0;
  int rc = write_at(fd, hdr, sizeof hdr, off);
  off += sizeof hdr;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    uint64_t l = prime_image_len(recs[i].size, recs[i].names_len);
    uint8_t *b = malloc(l);
    rc = b ? 0 : -1;
    if (b) {
      prime_encode_image(b, &recs[i]);
      rc = write_at(fd, b, l, off);
      off += l;
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
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return 0;
}

int cg_prime_rewrite(const char *path, cg_prime_select_fn select, void *sctx,
                     const cg_prime_set *const *add, size_t n_add,
                     cg_prime_warn_fn warn, void *wctx) {
  int fd;
  uint8_t *buf;
  size_t len;
  if (open_locked(path, true, UINT64_MAX, &fd, &buf, &len, NULL, NULL, warn, wctx) != 0) return -1;
  int rc = -1;
  cg_prime_set *cur = NULL;
  bool *keep = NULL;
  cg_prime_record *list = NULL;
  if (prime_parse_owned(buf, len, path, false, &cur, warn, wctx) != 0) goto out;
  size_t total = cur->n;
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
  n = prime_fold_dups(list, NULL, n);
  if (n == (size_t)-1) {
    prime_warnf(warn, wctx, path, "out of memory; not rewritten");
    goto out;
  }
  rc = replace_file(path, list, n, warn, wctx);
out:
  /* The lock is dropped only now, after the rename: a writer that waited on
   * the old file sees it is no longer at path and reopens. */
  close(fd);
  free(list);
  free(keep);
  cg_prime_free(cur);
  return rc;
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

/* Reading was the first half of the work, walking is the second. */
static void verify_progress(void *vctx, uint64_t done, uint64_t total) {
  verify_ctx *v = vctx;
  v->progress(v->ctx, total + done, 2 * total);
}

int cg_prime_verify(const char *path, cg_prime_walk_fn each, cg_prime_progress_fn progress,
                    void *ctx, cg_prime_warn_fn warn, void *wctx) {
  int fd;
  uint8_t *buf;
  size_t len;
  if (open_locked(path, false, UINT64_MAX, &fd, &buf, &len, progress, ctx, warn, wctx) != 0)
    return -1;
  if (fd < 0) {
    prime_warnf(warn, wctx, path, "does not exist; nothing to verify");
    return -1;
  }
  close(fd);
  verify_ctx v = {each, progress, ctx, len, 0};
  unsigned version;
  if (prime_check_header(buf, len, &version) == PRIME_HDR_TORN) {
    cg_prime_walk_entry e = {0, len, CG_PRIME_REC_TORN, 0, "incomplete file header"};
    verify_each(&v, &e, NULL);
  } else if (len) {
    prime_walk(buf, len, verify_each, &v, progress ? verify_progress : NULL, &v);
  }
  free(buf);
  return v.bad ? 1 : 0;
}
