#include "name_cut.h"

#include <string.h>

size_t cg_name_cut(char *buf, size_t cap, const char *name) {
  if (cap < 8) {
    if (cap)
      buf[0] = '\0';
    return 0;
  }
  size_t n = strlen(name);
  if (n < cap) {
    memcpy(buf, name, n + 1);
    return n;
  }
  size_t keep = cap - 4; /* "..." and the NUL */
  memcpy(buf, name, keep);
  memcpy(buf + keep, "...", 4);
  return keep + 3;
}
