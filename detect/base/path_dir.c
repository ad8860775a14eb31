#include "capguard/path_dir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void cg_path_dir(const char *path, char *dir, size_t cap) {
  if (dir != path)
    snprintf(dir, cap, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, cap, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
}

int cg_make_parent(const char *path) {
  char dir[PATH_MAX];
  int n = snprintf(dir, sizeof dir, "%s", path);
  if (n < 0 || (size_t)n >= sizeof dir) {
    errno = ENAMETOOLONG;
    return -1;
  }
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir)
    return 0;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  return mkdir(dir, 0700) != 0 && errno != EEXIST ? -1 : 0;
}
