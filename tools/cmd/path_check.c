#include "path_check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/log_file.h"
#include "capguard/log_name.h"
#include "capguard/path_dir.h"

/* A file made in dir and removed at once: the only sure test that new files
 * can be made there (a read-only mount, /proc, a full inode table). */
static int probe_dir(const char *dir, char *why, size_t cap) {
  char probe[PATH_MAX];
  if ((size_t)snprintf(probe, sizeof probe, "%s/.capguard-probe-XXXXXX", dir) >= sizeof probe) {
    snprintf(why, cap, "has a directory name too long");
    return -1;
  }
  int fd = mkstemp(probe);
  if (fd < 0) {
    snprintf(why, cap, "cannot be created in %s (%s)", dir, strerror(errno));
    return -1;
  }
  close(fd);
  unlink(probe);
  return 0;
}

/* An existing file opened for writing and closed: nothing written. */
static int probe_file(const char *path, char *why, size_t cap) {
  int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, cap, "cannot be written (%s)", strerror(errno));
    return -1;
  }
  close(fd);
  return 0;
}

/* A %q{VAR} whose VAR is unset would expand to nothing without a word (as
 * valgrind refuses it): set empty, it is asked for, as where a launcher's
 * parent has no RANK and each worker sets its own. */
int cg_log_unset_var(const char *name, char *why, size_t cap) {
  for (const char *p = name; (p = strchr(p, '%')) != NULL; p += 2) {
    if (!p[1])
      break;
    if (p[1] != 'q' || p[2] != '{')
      continue;
    const char *close = strchr(p + 3, '}');
    if (!close)
      break;
    char var[128];
    snprintf(var, sizeof var, "%.*s", (int)(close - p - 3), p + 3);
    if (*var && !getenv(var)) {
      snprintf(why, cap, "has %%q{%s}, but %s is not set, so it would expand to nothing: set it "
                         "(%s=0), or set it empty (%s=) where a launcher's workers each set their own",
               var, var, var, var);
      return -1;
    }
  }
  return 0;
}

int cg_log_usable(const char *name, char *why, size_t cap) {
  if (cg_log_check(name, why, cap) != 0 || cg_log_unset_var(name, why, cap) != 0)
    return -1;
  char path[PATH_MAX], dir[PATH_MAX];
  if (!cg_log_name_varies(name)) {
    if (cg_log_name_expand(name, path, sizeof path) != 0) {
      snprintf(why, cap, "is too long once expanded");
      return -1;
    }
    struct stat st;
    if (lstat(path, &st) == 0)
      return probe_file(path, why, cap);
    cg_path_dir(path, dir, sizeof dir);
    return probe_dir(dir, why, cap);
  }
  cg_path_dir(name, dir, sizeof dir);
  /* a directory per process, or one a launcher's variable names: not ours to try */
  if (cg_log_name_has_pid(dir) || cg_log_name_expand(dir, path, sizeof path) == -2)
    return 0;
  if (cg_log_name_expand(dir, path, sizeof path) != 0) {
    snprintf(why, cap, "is too long once expanded");
    return -1;
  }
  return probe_dir(path, why, cap);
}

int cg_prime_usable(const char *path, bool named, bool readonly, char *why, size_t cap) {
  struct stat st;
  if (stat(path, &st) == 0) {
    if (readonly || probe_file(path, why, cap) == 0)
      return 0;
    int e = errno;
    snprintf(why, cap, "cannot be recorded into (%s): set CAPGUARD_PRIME_READONLY=1 to serve "
                       "from it without recording, or pass another --prime",
             strerror(e));
    return -1;
  }
  if (readonly) {
    /* nothing would be served, and the shim may not create it: the run would only break */
    snprintf(why, cap, "does not exist, and CAPGUARD_PRIME_READONLY=1 keeps the shim from creating it: "
                       "copy the fleet's file there, pass the --prime it is at, or unset "
                       "CAPGUARD_PRIME_READONLY to record into a new file");
    return -1;
  }
  char dir[PATH_MAX];
  cg_path_dir(path, dir, sizeof dir);
  if (stat(dir, &st) != 0 && named) {
    snprintf(why, cap, "cannot be created: its directory %s does not exist (capguard creates "
                       "none for --prime): create it (mkdir -p %s) or pass another --prime",
             dir, dir);
    return -1;
  }
  /* the default location: the shim makes the missing levels, so the nearest
   * directory that exists must take new ones */
  while (stat(dir, &st) != 0 && strcmp(dir, "/") && strcmp(dir, "."))
    cg_path_dir(dir, dir, sizeof dir);
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, cap, "cannot be created: %s is not a directory; pass another --prime", dir);
    return -1;
  }
  char probe_why[PATH_MAX + 128];
  if (probe_dir(dir, probe_why, sizeof probe_why) != 0) {
    snprintf(why, cap, "%s; pass a writable --prime, or set CAPGUARD_PRIME_READONLY=1 with a "
                       "file to serve from", probe_why);
    return -1;
  }
  return 0;
}
