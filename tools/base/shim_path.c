#include "shim_path.h"

#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CAPGUARD_LIBDIR
#define CAPGUARD_LIBDIR "/usr/local/lib"
#endif

int cg_exe_dir(char *buf, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return -1;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return -1;
  *slash = '\0';
  if ((size_t)snprintf(buf, cap, "%s", exe) >= cap)
    return -1;
  return 0;
}

/* ld.so splits LD_PRELOAD at spaces and colons: such a path cannot be preloaded. */
static int usable(const char *path, char *buf, size_t cap, char *why, size_t why_cap) {
  char real[PATH_MAX];
  if (!realpath(path, real) || access(real, R_OK) != 0)
    return -1;
  if (strpbrk(real, " :\t")) {
    snprintf(why, why_cap, "shim path '%s' contains a space or colon, which LD_PRELOAD cannot hold",
             real);
    return -2;
  }
  if ((size_t)snprintf(buf, cap, "%s", real) >= cap)
    return -1;
  return 0;
}

int cg_find_shim_from(char *buf, size_t cap, char *why, size_t why_cap, const char **from) {
  why[0] = '\0';
  const char *src = "";
  if (!from)
    from = &src;
  const char *env = getenv("CAPGUARD_SHIM");
  if (env && *env) {
    *from = "from CAPGUARD_SHIM";
    int rc = usable(env, buf, cap, why, why_cap);
    if (rc == -1)
      snprintf(why, why_cap, "CAPGUARD_SHIM=%s is not a readable file", env);
    return rc == 0 ? 0 : -1;
  }
  char dir[PATH_MAX] = "?";
  char cand[PATH_MAX + 64];
  if (cg_exe_dir(dir, sizeof dir) == 0) {
    *from = "in the build tree";
    snprintf(cand, sizeof cand, "%s/../shim/" CG_SHIM_NAME, dir); /* build tree */
    int rc = usable(cand, buf, cap, why, why_cap);
    if (rc != -1)
      return rc == 0 ? 0 : -1;
    /* an install prefix, or the capguard Python package (capguard/bin, capguard/lib) */
    *from = "installed with the command";
    static const char *const patterns[] = {"%s/../lib*/" CG_SHIM_NAME, "%s/../lib*/*/" CG_SHIM_NAME};
    for (size_t p = 0; p < 2; p++) {
      snprintf(cand, sizeof cand, patterns[p], dir);
      glob_t g;
      if (glob(cand, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
          rc = usable(g.gl_pathv[i], buf, cap, why, why_cap);
          if (rc != -1) {
            globfree(&g);
            return rc == 0 ? 0 : -1;
          }
        }
        globfree(&g);
      }
    }
  }
  /* A wheel has no libdir of its own (CAPGUARD_LIBDIR is empty there). */
  static const char libdir[] = CAPGUARD_LIBDIR;
  int rc = -1;
  if (libdir[0]) {
    *from = "from the libdir capguard was built for";
    rc = usable(CAPGUARD_LIBDIR "/" CG_SHIM_NAME, buf, cap, why, why_cap);
    if (rc == 0)
      return 0;
  }
  if (rc == -1)
    snprintf(why, why_cap,
             CG_SHIM_NAME " not found (looked in %s/../shim, %s/../lib*%s%s); build it, reinstall "
                          "capguard, or set CAPGUARD_SHIM=/path/to/" CG_SHIM_NAME,
             dir, dir, libdir[0] ? ", " : "", libdir);
  return -1;
}

int cg_find_shim(char *buf, size_t cap, char *why, size_t why_cap) {
  return cg_find_shim_from(buf, cap, why, why_cap, NULL);
}
