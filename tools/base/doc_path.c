#include "doc_path.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* "<bin>/..": the prefix the running command was installed into ("" if unknown). */
static const char *prefix(char *buf, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return "";
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return "";
  *slash = '\0';
  slash = strrchr(exe, '/');
  if (!slash || strcmp(slash, "/bin"))
    return ""; /* a build tree (build/tools/capguard): the docs are the checkout's */
  *slash = '\0';
  snprintf(buf, cap, "%s", exe);
  return buf;
}

const char *cg_doc_path(const char *name, char *buf, size_t cap) {
  char pre[PATH_MAX];
  if (*prefix(pre, sizeof pre) &&
      (size_t)snprintf(buf, cap, "%s/share/doc/capguard/%s", pre, name) < cap &&
      access(buf, R_OK) == 0)
    return buf;
  snprintf(buf, cap, "docs/%s", name);
  return buf;
}

const char *cg_man_command(char *buf, size_t cap) {
  char pre[PATH_MAX];
  if (*prefix(pre, sizeof pre) &&
      (size_t)snprintf(buf, cap, "man %s/share/man/man1/capguard.1", pre) < cap &&
      access(buf + 4, R_OK) == 0) {
    /* in a system prefix man finds it by name; beside a venv's python it may not */
    if (!strcmp(pre, "/usr") || !strcmp(pre, "/usr/local"))
      snprintf(buf, cap, "man capguard");
    return buf;
  }
  snprintf(buf, cap, "man docs/capguard.1");
  return buf;
}
