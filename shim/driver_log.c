/* The driver's log callback (driver_log.h): a refusal the driver logs
 * names its call as the first offender of the captures it broke, when that
 * call is one capguard does not wrap (a wrapped call names itself, with its
 * verdict and handle, in breakers.c and guard.c). The stacks are taken here,
 * on the offending thread, while the call is on the stack; they are
 * symbolized only when the capture's record is written (dladdr takes the
 * loader's lock, which a thread waiting for the driver may hold). */
#include "driver_log.h"

#include <stdlib.h>
#include <string.h>

#include "captures.h"
#include "entry_points.h"
#include "names.h"

/* needle in the n bytes at hay, or NULL (memmem is not on the shim's list of
 * glibc functions: tests/shim/check_links.sh). */
static const char *find(const char *hay, size_t n, const char *needle, size_t k) {
  for (size_t i = 0; i + k <= n; i++)
    if (hay[i] == needle[0] && !memcmp(hay + i, needle, k))
      return hay + i;
  return NULL;
}

_Bool cg_driver_log_parse(const char *message, size_t length, int *code, char *call, size_t cap) {
  static const char returning[] = "Returning ", from[] = " from ";
  if (!message || !cap)
    return 0;
  const char *nul = memchr(message, 0, length);
  size_t n = nul ? (size_t)(nul - message) : length;
  const char *end = message + n;
  const char *p = find(message, n, returning, sizeof returning - 1);
  if (!p)
    return 0;
  p += sizeof returning - 1;
  int v = 0, digits = 0;
  while (p < end && *p >= '0' && *p <= '9' && digits < 9) {
    v = v * 10 + (*p++ - '0');
    digits++;
  }
  if (!digits)
    return 0;
  const char *f = find(p, (size_t)(end - p), from, sizeof from - 1);
  if (!f)
    return 0;
  f += sizeof from - 1;
  size_t k = 0;
  while (f + k < end && (f[k] == '_' || (f[k] >= 'a' && f[k] <= 'z') || (f[k] >= 'A' && f[k] <= 'Z') ||
                         (f[k] >= '0' && f[k] <= '9')))
    k++;
  if (!k)
    return 0;
  if (k >= cap)
    k = cap - 1;
  memcpy(call, f, k);
  call[k] = 0;
  *code = v;
  return 1;
}

/* The codes of refusals that break a capture (an end's 901 only reports an
 * earlier break; 904 and 908 are ends, which capguard wraps). */
static _Bool breaks(int code) {
  return code == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || code == CUDA_ERROR_STREAM_CAPTURE_ISOLATION ||
         code == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT || code == CUDA_ERROR_CAPTURED_EVENT;
}

void cg_driver_log_callback(void *data, CUlogLevel level, char *message, size_t length) {
  (void)data;
  (void)level;
  int code;
  char call[96];
  if (cg_nothing_captures() || !cg_driver_log_parse(message, length, &code, call, sizeof call) ||
      !breaks(code) || cg_ep_find(call) >= 0)
    return;
  cg_begin_site *site = cg_site_take(CG_SITE_MAX_FRAMES);
  cg_break b = cg_break_of(cg_name_intern(call, "a call capguard does not wrap"), CG_EV_DRIVER_LOG, CG_VERDICT_BROKE, (CUresult)code, site);
  cg_captures_break_logged(code, &b);
  free(site);
}
