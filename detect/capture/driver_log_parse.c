/* capguard/driver_log_parse.h: the driver's log lines, read. */
#include "capguard/driver_log_parse.h"

#include <string.h>

/* needle in the n bytes at hay, or NULL (memmem is not on the shim's list of
 * glibc functions: tests/shim/check_links.sh). */
static const char *find(const char *hay, size_t n, const char *needle, size_t k) {
  for (size_t i = 0; i + k <= n; i++)
    if (hay[i] == needle[0] && !memcmp(hay + i, needle, k))
      return hay + i;
  return NULL;
}

bool cg_driver_log_parse(const char *message, size_t length, int *code, char *call, size_t cap) {
  static const char returning[] = "Returning ", from[] = " from ";
  if (!message || !cap)
    return false;
  const char *nul = memchr(message, 0, length);
  size_t n = nul ? (size_t)(nul - message) : length;
  const char *end = message + n;
  const char *p = find(message, n, returning, sizeof returning - 1);
  if (!p)
    return false;
  p += sizeof returning - 1;
  int v = 0, digits = 0;
  while (p < end && *p >= '0' && *p <= '9' && digits < 9) {
    v = v * 10 + (*p++ - '0');
    digits++;
  }
  if (!digits)
    return false;
  const char *f = find(p, (size_t)(end - p), from, sizeof from - 1);
  if (!f)
    return false;
  f += sizeof from - 1;
  size_t k = 0;
  while (f + k < end && (f[k] == '_' || (f[k] >= 'a' && f[k] <= 'z') || (f[k] >= 'A' && f[k] <= 'Z') ||
                         (f[k] >= '0' && f[k] <= '9')))
    k++;
  if (!k)
    return false;
  if (k >= cap)
    k = cap - 1;
  memcpy(call, f, k);
  call[k] = 0;
  *code = v;
  return true;
}

