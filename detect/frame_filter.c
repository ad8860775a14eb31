#include "capguard/frame_filter.h"

#include <string.h>

bool cg_frame_is_plumbing(const char *object) {
  static const char *const prefixes[] = {"libcapguard", "libcuda.so", "libcudart",
                                         "libclang_rt.", "libasan.so"};
  if (!object)
    return false;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(object, prefixes[i], strlen(prefixes[i])) == 0)
      return true;
  return false;
}
