#include "absolute_path.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cg_path_absolute(char *path, size_t cap) {
  if (path[0] == '/')
    return 0;
  char cwd[PATH_MAX], whole[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    return -1;
  int n = snprintf(whole, sizeof whole, "%s/%s", cwd, path);
  if (n < 0 || (size_t)n >= sizeof whole || (size_t)n >= cap)
    return -1;
  memcpy(path, whole, (size_t)n + 1);
  return 0;
}
