/* libFuzzer target: any bytes (to the first NUL) as a demangled kernel name
 * (cg_kernel_name_shorten, which the shim runs on a host's kernel names when
 * it writes a line), and as a name given to cg_kernel_display_name with a
 * demangler that answers the input itself. Promises: never a crash or a read
 * past the string (ASan); the length returned is the same whatever the
 * buffer, at most 3 characters for each of the input's ("<>" becomes
 * "<...>"); what is written is that name's start, NUL-terminated; a name
 * without ' ', '<', '(' or '{' comes back as it is. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/kernel_name.h"

static const char *answer; /* what the fake demangler demangles to */

static char *fake_demangle(const char *mangled, char *out, size_t *len, int *status) {
  (void)mangled, (void)out, (void)len;
  char *d = strdup(answer);
  *status = d ? 0 : -1;
  return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t n = strnlen((const char *)data, size);
  char *s = malloc(n + 1); /* exactly the string: ASan sees any overread */
  if (!s)
    return 0;
  memcpy(s, data, n);
  s[n] = '\0';
  size_t whole = cg_kernel_name_shorten(s, NULL, 0);
  if (whole > 3 * n)
    abort();
  char *full = malloc(whole + 1);
  if (!full || cg_kernel_name_shorten(s, full, whole + 1) != whole || strlen(full) != whole)
    abort();
  if (!strpbrk(s, " <({") && strcmp(full, s))
    abort();
  for (size_t cap = 1; cap <= 41; cap += 8) {
    char out[41];
    memset(out, 'Z', sizeof out);
    if (cg_kernel_name_shorten(s, out, cap) != whole)
      abort();
    size_t k = strnlen(out, cap);
    if (k >= cap || k != (whole < cap ? whole : cap - 1) || memcmp(out, full, k))
      abort();
  }
  /* through the demangler: "_Z" names only, the others as they are */
  char disp[64];
  answer = s;
  size_t d = cg_kernel_display_name(s, fake_demangle, disp, sizeof disp);
  if (d != (n >= 2 && s[0] == '_' && s[1] == 'Z' ? whole : n) ||
      strlen(disp) != (d < sizeof disp ? d : sizeof disp - 1))
    abort();
  free(full);
  free(s);
  return 0;
}
