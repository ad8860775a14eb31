#include "capguard/frame_filter.h"

#include <string.h>

bool cg_py_file_is_machinery(const char *file) {
  /* The frameworks' and array libraries' own code: a CuPy array made inside
   * a capture allocates in cupy/_core, but the line to fix is the caller's. */
  /* arrays, not pointers, here and below: a table of pointers is relocated
   * at every start-up of every process the shim is in */
  static const char dirs[][16] = {"/triton/", "/torch/", "/cupy/", "/cupy_backends/", "/numba/", "/warp/"};
  for (size_t i = 0; file && i < sizeof dirs / sizeof dirs[0]; i++)
    if (strstr(file, dirs[i]))
      return true;
  return false;
}

bool cg_frame_is_plumbing(const char *object) {
  static const char prefixes[][16] = {"libcapguard", "libcuda.so", "libcudart", "libclang_rt.", "libasan.so"};
  if (!object)
    return false;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(object, prefixes[i], strlen(prefixes[i])) == 0)
      return true;
  return false;
}
