/* libFuzzer target: any bytes as one message of the driver's log
 * (cg_driver_log_parse, what capguard's log callback runs inside the driver).
 * Promises: never a crash or a read past the length (ASan); true only for a
 * line holding "Returning " + digits + ... + " from " + a name, with that
 * name copied whole (or cut to the buffer) and NUL-terminated; false writes
 * nothing. Every buffer size is tried. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/driver_log_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *copy = malloc(size ? size : 1); /* exactly size bytes: ASan sees any overread */
  if (!copy)
    return 0;
  memcpy(copy, data, size);
  for (size_t cap = 1; cap <= 66; cap += 13) {
    char call[66];
    memset(call, 'Z', sizeof call);
    int code = -1;
    if (!cg_driver_log_parse(copy, size, &code, call, cap)) {
      if (code != -1 || call[0] != 'Z')
        abort();
      continue;
    }
    size_t k = strnlen(call, cap);
    if (k >= cap || code < 0 || code > 999999999)
      abort();
    if (cap > 1 && k == 0)
      abort();
    for (size_t i = 0; i < k; i++)
      if (!(call[i] == '_' || (call[i] >= 'a' && call[i] <= 'z') || (call[i] >= 'A' && call[i] <= 'Z') ||
            (call[i] >= '0' && call[i] <= '9')))
        abort();
    if (!memchr(copy, 'R', size))
      abort();
  }
  free(copy);
  return 0;
}
