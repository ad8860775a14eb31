#include "capguard/env_value.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Anything else is a typo worth saying so: 12.2, 1202, 120200. */
int cg_parse_driver_version(const char *s, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 9000 || v > 99990 || v % 10)
    return -1;
  *out = (int)v;
  return 0;
}

/* By hand, not strcmp: the shim's constructor reads its switches, and each
 * glibc function it calls first there is bound then (about 800
 * instructions of every process's start-up). */
static bool same(const char *a, const char *b) {
  while (*a && *a == *b)
    a++, b++;
  return *a == *b;
}

int cg_parse_bool(const char *s, bool *out) {
  if (same(s, "1") || same(s, "yes") || same(s, "true") || same(s, "on")) {
    *out = true;
    return 0;
  }
  if (same(s, "0") || same(s, "no") || same(s, "false") || same(s, "off") || !*s) {
    *out = false;
    return 0;
  }
  return -1;
}

int cg_parse_hang_seconds(const char *s, unsigned *out) {
  /* digits only: strtol would take " 5" and "+5", which a typo or a
   * template's stray space makes, as 5 without a word */
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9')
      return -1;
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  if (errno || end == s || *end || n < 1 || n > 86400)
    return -1;
  *out = (unsigned)n;
  return 0;
}
