#include "capguard/frame_filter.h"

#include <string.h>

bool cg_py_file_is_machinery(const char *file) {
  static const char *const dirs[] = {"/triton/", "/torch/"};
  for (size_t i = 0; file && i < sizeof dirs / sizeof dirs[0]; i++)
    if (strstr(file, dirs[i]))
      return true;
  return false;
}

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
