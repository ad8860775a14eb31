#include "metrics_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capguard/write_whole.h"
#include "warn.h"

static int warned;    /* a failure said once; the next write tries again */
static int written;   /* writes made: the first sweeps nothing (never the first capture's end) */
static long sweep_at; /* where the next slice of the sweep starts (telldir), 0: the directory's start */

/* The pid namespace's inode: a pid is only checked against /proc in the
 * namespace it belongs to (containers on one node share the directory,
 * each with pids of its own). 0 when unknown. */
static unsigned long long pid_namespace(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* capguard_<ns>_<pid>.prom: the ns and pid parsed; false for other names. */
static bool parse_name(const char *name, unsigned long long *ns, long *pid) {
  static const char head[] = "capguard_", tail[] = ".prom";
  size_t n = strlen(name);
  if (n <= sizeof head + sizeof tail || strncmp(name, head, sizeof head - 1) != 0 ||
      strcmp(name + n - (sizeof tail - 1), tail) != 0)
    return false;
  const char *p = name + sizeof head - 1;
  char *end;
  errno = 0;
  *ns = strtoull(p, &end, 10);
  if (end == p || *end != '_' || errno)
    return false;
  p = end + 1;
  *pid = strtol(p, &end, 10);
  return end != p && *pid > 0 && strcmp(end, tail) == 0;
}

/* Whether a process of this pid namespace is gone: kill(pid, 0) sends
 * nothing, and says ESRCH only when no such process exists. EPERM is a live
 * process of another user (which /proc mounted hidepid=2 hides: a stat of
 * /proc/PID would say ENOENT); any other answer keeps the file. */
static bool process_gone(long pid) {
  if (pid <= 0 || pid > 0x7fffffffL)
    return false;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The rule (docs/fleet.md): a file of this pid namespace whose process is
 * gone and which was last written CG_METRICS_KEEP_MINUTES ago or more. A
 * file of another namespace is never removed here: its pid cannot be
 * checked from this one. One slice a write, SWEEP_SLICE entries from where
 * the last left off: what a write costs never grows with the directory. */
enum { SWEEP_SLICE = 256 };
static void sweep_slice(const char *dir, unsigned long long my_ns) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  if (sweep_at)
    seekdir(d, sweep_at);
  time_t now = time(NULL);
  struct dirent *e = NULL;
  int seen = 0;
  while (seen < SWEEP_SLICE && (e = readdir(d))) {
    seen++;
    unsigned long long ns;
    long pid;
    if (!parse_name(e->d_name, &ns, &pid) || ns != my_ns || pid == (long)getpid() || !process_gone(pid))
      continue;
    char path[4096];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path ||
        lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || now - st.st_mtime < CG_METRICS_KEEP_MINUTES * 60)
      continue;
    unlink(path);
  }
  sweep_at = e ? telldir(d) : 0; /* the end reached: the next slice starts over */
  if (sweep_at < 0)
    sweep_at = 0;
  closedir(d);
}

static bool fail(const char *dir, const char *what, int err) {
  if (!warned)
    cg_warn("cannot write the metrics file in %s (%s: %s); trying again at the next write", dir, what,
            strerror(err));
  warned = 1;
  return false;
}

bool cg_metrics_file_write(const char *dir, const char *text, size_t len, bool at_exit) {
  unsigned long long ns = pid_namespace();
  long pid = (long)getpid();
  char path[4096], tmp[4096];
  /* The temporary name does not end in .prom: the collector never reads it. */
  if (snprintf(path, sizeof path, "%s/capguard_%llu_%ld.prom", dir, ns, pid) >= (int)sizeof path ||
      snprintf(tmp, sizeof tmp, "%s/.capguard_%llu_%ld.prom.tmp", dir, ns, pid) >= (int)sizeof tmp)
    return fail(dir, "the path", ENAMETOOLONG);
  /* A new regular file of its own (O_EXCL: never a link, a FIFO or a
   * device someone left under that name); a leftover of a writer with this
   * pid, dead since, is removed first. No descriptor stays open. */
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(dir, "create", errno);
  /* 0644 whatever the host's umask (077 would make it 0600): the collector
   * (node_exporter, often as nobody) reads it; it holds only counts */
  int err = fchmod(fd, 0644) != 0 ? errno : 0;
  if (!err)
    err = cg_write_whole(fd, text, len, -1, NULL); /* a size limit raises no SIGXFSZ in the host */
  if (close(fd) != 0 && !err)
    err = errno;
  if (err) {
    unlink(tmp);
    return fail(dir, "write", err);
  }
  if (rename(tmp, path) != 0) {
    err = errno;
    unlink(tmp);
    return fail(dir, "rename", err);
  }
  if (warned)
    cg_warn("the metrics file in %s is written again", dir);
  warned = 0;
  if (written++ || at_exit) /* never the first write's: that is a capture's end */
    sweep_slice(dir, ns);
  return true;
}

void cg_metrics_file_atfork_child(void) {
  warned = 0;
  written = 0;
  sweep_at = 0;
}
