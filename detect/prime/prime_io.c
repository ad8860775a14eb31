/* Opening, locking and mapping the priming file (docs/priming-format.md,
 * "Safety" and "Locking"). This code runs inside the user's process via the
 * shim: every failure is one warning and a -1, and no wait is unbounded. */
#include "prime_io.h"

#include "capguard/write_whole.h"
#include "capguard/path_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A lock holder that has not changed the file for this long is stuck (holders
 * keep the lock for one short write, or a reader's walk); a waiter then gives
 * up rather than hang the user's process. While the file keeps changing,
 * others are making progress through the queue, and the waiter waits on. */
#define STALL_MS 10000
/* Even a queue that keeps moving is not waited on longer than this. */
#define MAX_WAIT_MS 120000
#define REOPEN_TRIES 16 /* the path kept changing between open and create */


/* Trusted as ssh and sudo trust a file: owned by root or by you, and
 * writable by no one else, and so each directory above it (one that others
 * may write is safe only with its sticky bit, as /tmp: nobody else may then
 * rename or remove what is yours in it). A fleet file baked into an image is
 * root's, read by an engine that is not root. The refusal names the fix. */
static bool owner_trusted(uid_t uid) { return uid == 0 || uid == geteuid(); }

/* dir: NULL for the file itself, else the directory above it that is refused. */
static int refuse_owner(const char *dir, uid_t uid, const char *path, cg_prime_warn_fn warn, void *ctx) {
  const char *name = dir ? dir : path;
  char who[160];
  if (geteuid() == 0)
    snprintf(who, sizeof who, "not by root; not used: run 'chown root ");
  else
    snprintf(who, sizeof who, "neither root nor you (uid %u); not used: run 'chown %u ", (unsigned)geteuid(),
             (unsigned)geteuid());
  prime_warnf(warn, ctx, path, "%s%s%sowned by uid %u, %s%s'%s", dir ? "its directory " : "", dir ? dir : "",
              dir ? " is " : "", (unsigned)uid, who, name,
              geteuid() == 0 ? "" : " as root, or set CAPGUARD_PRIME to a file of your own");
  return -1;
}

/* Each directory above path, nearest first, up to the root. */
static int check_dirs(const char *path, cg_prime_warn_fn warn, void *ctx) {
  char dir[PATH_MAX];
  size_t n = 0;
  if (path[0] != '/') {
    if (!getcwd(dir, sizeof dir - 1))
      return 0; /* the file itself was checked; nothing more to see */
    n = strlen(dir);
    if (n > 1)
      dir[n++] = '/';
  }
  if (snprintf(dir + n, sizeof dir - n, "%s", path) >= (int)(sizeof dir - n))
    return 0;
  char *slash;
  while ((slash = strrchr(dir, '/')) != NULL) {
    slash[slash == dir] = '\0'; /* "/x" leaves "/" */
    struct stat st;
    if (stat(dir, &st) == 0) {
      if (!owner_trusted(st.st_uid))
        return refuse_owner(dir, st.st_uid, path, warn, ctx);
      if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
        prime_warnf(warn, ctx, path,
                    "its directory %s is writable by group or others (mode %03o); not used: run "
                    "'chmod go-w %s'",
                    dir, (unsigned)(st.st_mode & 0777), dir);
        return -1;
      }
    }
    if (slash == dir)
      break;
  }
  return 0;
}

static int check_owner(const struct stat *st, const char *path, cg_prime_warn_fn warn, void *ctx) {
  if (!S_ISREG(st->st_mode)) {
    prime_warnf(warn, ctx, path, "not a regular file; not used: set CAPGUARD_PRIME to a file path");
    return -1;
  }
  if (!owner_trusted(st->st_uid))
    return refuse_owner(NULL, st->st_uid, path, warn, ctx);
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    prime_warnf(warn, ctx, path,
                "writable by group or others (mode %03o); not used: run 'chmod go-w %s'",
                (unsigned)(st->st_mode & 0777), path);
    return -1;
  }
  return check_dirs(path, warn, ctx);
}

static void warn_open(const char *path, int err, bool create, cg_prime_warn_fn warn, void *ctx) {
  if (create && (err == EACCES || err == EROFS || err == EPERM))
    /* Only appends open for writing: a read-only file was still read and served. */
    prime_warnf(warn, ctx, path,
                "cannot open it for writing (%s); nothing more recorded, what it holds is still used",
                strerror(err));
  else if (err == ELOOP || err == EMLINK)
    prime_warnf(warn, ctx, path,
                "is a symbolic link, which capguard does not follow; not used: replace it with "
                "the file itself or set CAPGUARD_PRIME to the real path");
  else if (err == EACCES && !create && stat(path, &(struct stat){0}) == 0)
    /* its directories let us see it: the file's own read bit is missing */
    prime_warnf(warn, ctx, path, "cannot open it (%s); not used: run 'chmod a+r %s'", strerror(err), path);
  else
    prime_warnf(warn, ctx, path, "cannot open it (%s); not used", strerror(err));
}

/* O_NONBLOCK keeps a FIFO planted at the path from blocking the open before
 * fstat sees what it is; on the regular file it is refused otherwise, it
 * changes nothing. O_EXCL on create makes a racing creator or a planted link
 * send us round again instead of through it. */
int prime_open_checked(const char *path, bool create, struct stat *st, cg_prime_warn_fn warn, void *ctx) {
  int flags = (create ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
  for (int tries = 0; tries < REOPEN_TRIES; tries++) {
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT && create) {
      if (cg_make_parent(path) != 0) {
        prime_warnf(warn, ctx, path, "cannot create its directory (%s); nothing recorded",
                    strerror(errno));
        return -1;
      }
      fd = open(path, flags | O_CREAT | O_EXCL, 0600);
      if (fd < 0 && errno == EEXIST) continue;
    }
    if (fd < 0) {
      if (errno == ENOENT && !create) return -2;
      warn_open(path, errno, create, warn, ctx);
      return -1;
    }
    if (fstat(fd, st) != 0) {
      prime_warnf(warn, ctx, path, "cannot stat it (%s); not used", strerror(errno));
      close(fd);
      return -1;
    }
    if (check_owner(st, path, warn, ctx) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  prime_warnf(warn, ctx, path, "it keeps appearing and disappearing; nothing recorded");
  return -1;
}

/* Who holds a lock on this inode, from /proc/locks ("1: FLOCK ADVISORY WRITE
 * 1234 08:01:5678 0 EOF"); 0 when it cannot tell. */
static long lock_holder(const struct stat *st) {
  FILE *f = fopen("/proc/locks", "re");
  if (!f) return 0;
  char line[256];
  long pid = 0;
  while (!pid && fgets(line, sizeof line, f)) {
    long p;
    unsigned maj, min;
    unsigned long long ino;
    char kind[16];
    if (sscanf(line, "%*[^:]: %15s %*s %*s %ld %x:%x:%llu", kind, &p, &maj, &min, &ino) == 5 &&
        !strcmp(kind, "FLOCK") && ino == (unsigned long long)st->st_ino && p != getpid())
      pid = p;
  }
  fclose(f);
  return pid;
}

/* Is fd still the file at path? A rewrite renames a new file into place. */
static bool still_current(const struct stat *a, const char *path) {
  struct stat b;
  return lstat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int prime_open_locked(const char *path, bool create, int op, struct stat *st, cg_prime_warn_fn warn, void *ctx) {
  uint64_t start = cg_monotonic_ns(), last_change = start;
  struct stat seen = {0};
  for (;;) {
    int fd = prime_open_checked(path, create, st, warn, ctx);
    if (fd < 0) return fd;
    long nap_us = 50;
    for (;;) {
      if (flock(fd, op | LOCK_NB) == 0) break;
      if (errno != EWOULDBLOCK && errno != EINTR) {
        prime_warnf(warn, ctx, path, "cannot lock it (%s); not used", strerror(errno));
        close(fd);
        return -1;
      }
      uint64_t now = cg_monotonic_ns();
      struct stat cur;
      if (fstat(fd, &cur) == 0 && (cur.st_size != seen.st_size || cur.st_mtim.tv_nsec != seen.st_mtim.tv_nsec ||
                                   cur.st_mtim.tv_sec != seen.st_mtim.tv_sec)) {
        seen = cur;
        last_change = now;
      }
      bool stalled = now - last_change > (uint64_t)STALL_MS * 1000000u;
      if (stalled || now - start > (uint64_t)MAX_WAIT_MS * 1000000u) {
        long holder = lock_holder(st);
        char who[48] = "another process";
        if (holder) snprintf(who, sizeof who, "process %ld", holder);
        if (stalled)
          prime_warnf(warn, ctx, path,
                      "%s has held its lock for %d s without changing it; skipped rather than wait "
                      "on: check that process (stopped or hung?)", who, STALL_MS / 1000);
        else
          prime_warnf(warn, ctx, path,
                      "waited %d s for its lock while other processes kept writing to it; skipped: "
                      "too many processes record at once", MAX_WAIT_MS / 1000);
        close(fd);
        return -1;
      }
      struct timespec ts = {0, nap_us * 1000};
      nanosleep(&ts, NULL);
      if (nap_us < 5000) nap_us *= 2;
    }
    if (still_current(st, path) && fstat(fd, st) == 0) return fd;
    close(fd); /* replaced while we waited: the new file is the one to use */
    last_change = cg_monotonic_ns();
  }
}

int prime_open_locked_nowait(const char *path, bool create, int op, struct stat *st, cg_prime_warn_fn warn,
                             void *ctx) {
  for (int tries = 0; tries < REOPEN_TRIES; tries++) {
    int fd = prime_open_checked(path, create, st, warn, ctx);
    if (fd < 0) return fd;
    if (flock(fd, op | LOCK_NB) != 0) {
      int err = errno;
      close(fd);
      if (err == EWOULDBLOCK || err == EINTR) return -3;
      prime_warnf(warn, ctx, path, "cannot lock it (%s); not used", strerror(err));
      return -1;
    }
    if (still_current(st, path) && fstat(fd, st) == 0) return fd;
    close(fd); /* replaced meanwhile: the new file is the one to use */
  }
  return -3;
}

int prime_map(int fd, size_t len, uint8_t **map, const char *path, cg_prime_warn_fn warn, void *ctx) {
  *map = NULL;
  if (!len) return 0;
  void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    prime_warnf(warn, ctx, path, "cannot map its %zu bytes (%s); not used", len, strerror(errno));
    return -1;
  }
  *map = m;
  return 0;
}

int prime_refuse_header(const uint8_t *buf, size_t len, const char *path, cg_prime_warn_fn warn, void *ctx) {
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

/* Through cg_write_whole: a record crossing the file-size limit fails with
 * EFBIG and never raises SIGXFSZ in the host; the appender then
 * cuts the part written, so no damaged record stays behind. */
int prime_write_at(int fd, const uint8_t *p, size_t n, uint64_t off) {
  int err = cg_write_whole(fd, p, n, (int64_t)off, NULL);
  if (!err) return 0;
  errno = err;
  return -1;
}

bool prime_record_ok(const cg_prime_record *r) {
  if (!r || !r->bytes || r->size == 0 || r->size > CG_IMAGE_MAX_BYTES || r->kind > CG_IMAGE_PTX ||
      r->names_len > PRIME_MAX_NAMES || (r->names_len && !r->kernel_names))
    return false;
  uint32_t nuls = 0;
  for (uint32_t i = 0; i < r->names_len; i++) nuls += r->kernel_names[i] == 0;
  if (r->names_len && r->kernel_names[r->names_len - 1] != 0) return false;
  cg_hash128 h = cg_hash_bytes(r->bytes, r->size);
  return nuls == r->n_kernels && h.hi == r->hash.hi && h.lo == r->hash.lo;
}
