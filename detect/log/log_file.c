/* The log's opening rules, shared by the shim and capguard run
 * (capguard/log_file.h). Written after prime_io.c's prime_open_checked: a log
 * is not code the driver runs, but a path that follows a planted link lets
 * anyone who can write the directory make capguard append to a file of their
 * choosing (an attack of docs/reliability.md: a victim file grew from 12 to 4,104 bytes). */
#include "capguard/log_file.h"
#include "capguard/path_dir.h"
#include "capguard/log_name.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file behind fd may be used as a log: regular, ours, not writable by
 * others. */
static int check_file(const struct stat *st, char *why, size_t cap) {
  if (!S_ISREG(st->st_mode)) {
    snprintf(why, cap, "%s", S_ISDIR(st->st_mode) ? "is a directory, not a file" : "is not a regular file");
    return -1;
  }
  if (st->st_uid != geteuid()) {
    snprintf(why, cap, "is owned by uid %u, not by you (uid %u)", (unsigned)st->st_uid, (unsigned)geteuid());
    return -1;
  }
  /* a hard link planted at the path (a root-owned file in a directory the
   * attacker can write) would be appended to under another name */
  if (st->st_nlink > 1) {
    snprintf(why, cap,
             "has %lu links (a hard link to a file elsewhere?): capguard appends only to a file "
             "of one link",
             (unsigned long)st->st_nlink);
    return -1;
  }
  if (st->st_mode & (S_IWGRP | S_IWOTH)) {
    snprintf(why, cap, "is writable by group or others (mode %03o): run 'chmod go-w' on it",
             (unsigned)(st->st_mode & 0777));
    return -1;
  }
  return 0;
}

static void open_error(int err, char *why, size_t cap) {
  if (err == ELOOP || err == EMLINK)
    snprintf(why, cap, "is a symbolic link, which capguard does not follow: name the file itself");
  else if (err == ENXIO)
    snprintf(why, cap, "is a FIFO with no reader, not a regular file");
  else if (err == EISDIR)
    snprintf(why, cap, "is a directory, not a file");
  else if (err == ENOENT)
    snprintf(why, cap, "cannot be created: its directory does not exist");
  else if (err == ENOTDIR)
    snprintf(why, cap, "cannot be created: a part of its directory is a file, not a directory");
  else
    snprintf(why, cap, "cannot be opened (%s)", strerror(err));
}

/* O_NONBLOCK: a FIFO planted at the path would block the open before fstat
 * sees what it is; O_NOFOLLOW: a planted link is refused (ELOOP), not
 * followed. O_EXCL on create: a link or file appearing between the two
 * opens sends us round again rather than through it. */
int cg_log_open(const char *path, char *why, size_t cap) {
  const int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW;
  for (int tries = 0; tries < 8; tries++) {
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT) {
      fd = open(path, flags | O_CREAT | O_EXCL, 0644);
      if (fd < 0 && errno == EEXIST)
        continue;
    }
    if (fd < 0) {
      open_error(errno, why, cap);
      return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      snprintf(why, cap, "cannot be examined (%s)", strerror(errno));
      close(fd);
      return -1;
    }
    if (check_file(&st, why, cap) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  snprintf(why, cap, "keeps appearing and disappearing");
  return -1;
}

int cg_log_check(const char *path, char *why, size_t cap) {
  if (!*path) {
    snprintf(why, cap, "is empty");
    return -1;
  }
  size_t len = strlen(path);
  if (path[len - 1] == '/') {
    snprintf(why, cap, "names a directory, not a file");
    return -1;
  }
  /* the name as the shim will expand it: a file of its own per process, or one file */
  if (cg_log_name_check(path, why, cap) != 0)
    return -1;
  bool per_process = cg_log_name_varies(path);
  char name[PATH_MAX];
  int expanded = cg_log_name_expand(path, name, sizeof name);
  if (expanded == -2 && cg_log_name_refusal(path, true, why, cap) != 0)
    return -1; /* a variable set here to nothing, or to a path */
  if (expanded == -1 || (expanded == -2 && !per_process)) {
    snprintf(why, cap, "is too long once expanded");
    return -1;
  }
  if (!per_process)
    path = name;
  struct stat st;
  if (!per_process && lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      open_error(ELOOP, why, cap);
      return -1;
    }
    if (check_file(&st, why, cap) != 0)
      return -1;
    if (access(path, W_OK) != 0) {
      snprintf(why, cap, "cannot be written (%s)", strerror(errno));
      return -1;
    }
    return 0;
  }
  if (!per_process && errno != ENOENT) {
    open_error(errno, why, cap);
    return -1;
  }
  char dir[PATH_MAX];
  cg_path_dir(path, dir, sizeof dir);
  /* a directory per process, or one whose variable only the command's
   * launcher sets: made by someone else, or never (a process that cannot
   * open its log then writes to capguard run's fallback file) */
  char expanded_dir[PATH_MAX];
  if (cg_log_name_has_pid(dir) || cg_log_name_expand(dir, expanded_dir, sizeof expanded_dir) == -2)
    return 0;
  if (cg_log_name_expand(dir, expanded_dir, sizeof expanded_dir) != 0) {
    snprintf(why, cap, "is too long once expanded");
    return -1;
  }
  snprintf(dir, sizeof dir, "%s", expanded_dir);
  if (stat(dir, &st) != 0) {
    snprintf(why, cap, "cannot be created: its directory %s %s", dir,
             errno == ENOENT ? "does not exist" : strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    snprintf(why, cap, "cannot be created: %s is not a directory", dir);
    return -1;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(why, cap, "cannot be created in %s (%s)", dir, strerror(errno));
    return -1;
  }
  return 0;
}
