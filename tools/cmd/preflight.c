#include "preflight.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "env_table.h"

/* 0 runnable, 126 found but not runnable (why set), 127 not there. */
static int runnable(const char *path, char *why, size_t cap) {
  struct stat st;
  if (stat(path, &st) != 0)
    return 127;
  if (S_ISDIR(st.st_mode)) {
    snprintf(why, cap, "is a directory, not a program");
    return 126;
  }
  if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
    snprintf(why, cap, "is not executable (chmod +x %s)", path);
    return 126;
  }
  return 0;
}

int cg_preflight_command(const char *me, const char *argv0) {
  char why[PATH_MAX + 64] = "", shown[PATH_MAX];
  cg_printable(argv0, shown, sizeof shown);
  if (!*argv0) {
    cg_error(me, "cannot run '': an empty command name");
    return 127;
  }
  if (strchr(argv0, '/')) {
    int rc = runnable(argv0, why, sizeof why);
    if (rc == 127)
      cg_error(me, "cannot run '%s': No such file or directory; check the path", shown);
    else if (rc)
      cg_error(me, "cannot run '%s': it %s", shown, why);
    return rc;
  }
  /* execvp's search: each directory of PATH in turn (its default when unset) */
  const char *path = getenv("PATH");
  if (!path)
    path = "/bin:/usr/bin";
  int found = 127;
  char where[PATH_MAX], first_why[PATH_MAX + 64] = "";
  for (const char *p = path;; p += strcspn(p, ":") + 1) {
    int len = (int)strcspn(p, ":");
    if (snprintf(where, sizeof where, "%.*s%s%s", len, len ? p : ".", "/", argv0) < (int)sizeof where) {
      int rc = runnable(where, why, sizeof why);
      if (rc == 0)
        return 0;
      if (rc == 126 && found == 127) {
        found = 126;
        snprintf(first_why, sizeof first_why, "%s %s", where, why);
      }
    }
    if (!p[len])
      break;
  }
  if (found == 126)
    cg_error(me, "cannot run '%s': %s", shown, first_why);
  else
    cg_error(me, "cannot run '%s': command not found in PATH; check the command name and PATH", shown);
  return found;
}

int cg_preflight_env_names(const char *me) {
  size_t at = 0;
  char line[512];
  if (cg_env_unknown(&at, line, sizeof line) != 0)
    return 0;
  return cg_usage_error(me, NULL, "%s: a misspelled name would run as if unset; unset it or correct it", line);
}
