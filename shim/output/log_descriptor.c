/* The log's descriptor, proven capguard's before each write
 * (log_descriptor.h). The proof is the device and inode fstat gives for it,
 * kept at open: one system call a line, against a descriptor number the
 * host may have closed and handed to a file of its own. A descriptor that
 * is no longer capguard's is never closed or written: it is the host's. */
#include "log_descriptor.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absolute_path.h"
#include "capguard/log_file.h"
#include "config.h"
#include "locks.h"
#include "warn.h"

static int log_fd = -1;
static dev_t log_dev;
static ino_t log_ino;
static char log_path[4096];
static bool reopen_said;
static pthread_mutex_t reopen_lock = PTHREAD_MUTEX_INITIALIZER;

static bool still_ours(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_dev == __atomic_load_n(&log_dev, __ATOMIC_ACQUIRE) &&
         st.st_ino == __atomic_load_n(&log_ino, __ATOMIC_ACQUIRE);
}

static int open_kept(const char *path, char *why, size_t cap) {
  int fd = cg_log_open(path, why, cap);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) != 0) {
    snprintf(why, cap, "cannot be examined");
    close(fd);
    return -1;
  }
  if (fd < 0)
    return -1;
  __atomic_store_n(&log_dev, st.st_dev, __ATOMIC_RELEASE);
  __atomic_store_n(&log_ino, st.st_ino, __ATOMIC_RELEASE);
  __atomic_store_n(&log_fd, fd, __ATOMIC_RELEASE);
  return fd;
}

int cg_log_fd_open(const char *path, char *why, size_t cap) {
  if (snprintf(log_path, sizeof log_path, "%s", path) >= (int)sizeof log_path) {
    snprintf(why, cap, "is too long");
    return -1;
  }
  if (open_kept(log_path, why, cap) < 0)
    return -1;
  /* Opened again, if ever, by the path it had at start: the program may
   * chdir() meanwhile. When that path cannot be said (no working
   * directory), it is never opened again. */
  if (cg_path_absolute(log_path, sizeof log_path) != 0)
    log_path[0] = '\0';
  return 0;
}

bool cg_log_fd_kept(void) { return __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE) >= 0; }

/* The number no longer names the log (closed by the host, perhaps reused
 * for a file of its own): the log is opened again by its path, under the
 * same rules, by one thread; the others then use its descriptor. */
static int reopen(int stale) {
  if (!cg_lock_or_exit_lock(&reopen_lock, "a log line"))
    return -1;
  int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
  if (fd == stale) {
    char why[256];
    __atomic_store_n(&log_fd, -1, __ATOMIC_RELEASE);
    fd = open_kept(log_path, why, sizeof why);
    if (fd < 0)
      cg_warn("the log's descriptor was closed by the program and %s could not be opened again: it %s; "
              "the log is incomplete from here on, %s", log_path, why,
              cg_cfg.quiet ? "and reports are quiet (CAPGUARD_QUIET=1): what follows is said nowhere"
                           : "reports continue on stderr");
    else if (!reopen_said)
      cg_warn("the log's descriptor was closed by the program (it may now be one of the program's own "
              "files, which capguard does not touch): %s opened again", log_path);
    reopen_said = true;
  }
  cg_unlock(&reopen_lock);
  return fd;
}

int cg_log_fd(void) {
  int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
  if (fd < 0 || still_ours(fd))
    return fd;
  return reopen(fd);
}

void cg_log_fd_close(void) {
  int fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
  if (fd >= 0 && still_ours(fd))
    close(fd);
  __atomic_store_n(&log_fd, -1, __ATOMIC_RELEASE);
}

void cg_log_fd_atfork_child(void) { pthread_mutex_init(&reopen_lock, NULL); }
