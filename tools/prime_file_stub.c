/* TEMPORARY, worktree only: detect/prime_file.c is still a placeholder here,
 * so this gives the doctor the two functions it uses, following the contract
 * in capguard/prime_file.h just far enough for the doctor's tests (missing
 * file = empty set; symlink or foreign/other-writable file refused). It is
 * compiled only while detect/prime_file.c is a placeholder (see
 * tools/meson.build) and must be deleted at merge. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/prime_file.h"

struct cg_prime_set {
  size_t n;
};

int cg_prime_default_path(char *buf, size_t cap) {
  const char *p = getenv("CAPGUARD_PRIME"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  int n;
  if (p && *p)
    n = snprintf(buf, cap, "%s", p);
  else if (x && *x)
    n = snprintf(buf, cap, "%s/capguard/prime.cgp", x);
  else if (h && *h)
    n = snprintf(buf, cap, "%s/.cache/capguard/prime.cgp", h);
  else
    return -1;
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int cg_prime_load(const char *path, cg_prime_set **out, cg_prime_warn_fn warn, void *ctx) {
  struct stat st;
  char line[512];
  *out = NULL;
  if (lstat(path, &st) != 0) { /* no such file (or no such directory): an empty set */
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -1;
  }
  const char *why = NULL;
  if (S_ISLNK(st.st_mode))
    why = "is a symlink";
  else if (st.st_uid != getuid())
    why = "is owned by another user";
  else if (st.st_mode & S_IWOTH)
    why = "is writable by others";
  if (why) {
    snprintf(line, sizeof line, "capguard: priming file %s %s; refused (remove it)", path, why);
    warn(ctx, line);
    return -1;
  }
  *out = calloc(1, sizeof **out);
  return *out ? 0 : -1;
}

size_t cg_prime_count(const cg_prime_set *s) { return s ? s->n : 0; }
const cg_prime_record *cg_prime_get(const cg_prime_set *s, size_t i) {
  (void)s;
  (void)i;
  return NULL;
}
void cg_prime_free(cg_prime_set *s) { free(s); }
