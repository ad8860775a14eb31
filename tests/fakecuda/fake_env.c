/* fakecuda: settings read from the environment at each call, so that one test process
 * can switch them with setenv between calls. */
#include "fake_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The integer in variable name, within [lo, hi], else fallback (one warning per variable). */
static int env_int(const char *name, int fallback, long lo, long hi, int *warned)
{
  const char *s = getenv(name);
  if (s == NULL || *s == '\0')
    return fallback;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) {
    if (!*warned) {
      fprintf(stderr, "fakecuda: ignoring %s=%s (want an integer in %ld..%ld), using %d\n",
              name, s, lo, hi, fallback);
      *warned = 1;
    }
    return fallback;
  }
  return (int)v;
}

int fc_env_driver_version(void)
{
  static int warned;
  return env_int("FAKECUDA_DRIVER_VERSION", 13000, 1000, 99990, &warned);
}

int fc_env_sm(void)
{
  static int warned;
  return env_int("FAKECUDA_SM", 90, 10, 255, &warned);
}
