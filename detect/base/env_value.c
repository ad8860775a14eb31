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

int cg_parse_bool(const char *s, bool *out) {
  if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "on")) {
    *out = true;
    return 0;
  }
  if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "off") || !*s) {
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
