/* Where a capture began, from the raw return addresses saved at the begin:
 * the first frame that is neither capguard's nor the CUDA libraries' own, as
 * "libtorch_cuda.so(at::cuda::CUDAGraph::capture_begin+0x1c4)". */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "stack_site.h"

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static int is_plumbing(const char *lib) {
  static const char *const prefixes[] = {"libcapguard", "libcuda.", "libcudart"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(lib, prefixes[i], strlen(prefixes[i])) == 0)
      return 1;
  return 0;
}

size_t cg_stack_symbolize_first_foreign(void *const *frames, size_t n, char *buf, size_t cap) {
  if (!cap)
    return 0;
  buf[0] = 0;
  for (size_t i = 0; i < n; i++) {
    Dl_info info;
    if (!dladdr(frames[i], &info) || !info.dli_fname)
      continue;
    const char *lib = base_name(info.dli_fname);
    if (is_plumbing(lib))
      continue;
    int len;
    if (info.dli_sname)
      len = snprintf(buf, cap, "%s(%s+0x%lx)", lib, info.dli_sname,
                     (unsigned long)((char *)frames[i] - (char *)info.dli_saddr));
    else
      len = snprintf(buf, cap, "%s+0x%lx", lib, (unsigned long)((char *)frames[i] - (char *)info.dli_fbase));
    return len < 0 ? 0 : (size_t)len;
  }
  return 0;
}
