#include "real_dlsym.h"

#include <dlfcn.h>
#include <stddef.h>

void *(*cg_real_dlsym)(void *handle, const char *name);

/* dlsym moved from libdl to libc in glibc 2.34 and got a new symbol version
 * there; older glibc only has the original version (which differs by
 * architecture). dlvsym is not interposed by capguard, so this cannot recurse. */
static const char *const dlsym_versions[] = {
    "GLIBC_2.34",
#if defined(__x86_64__)
    "GLIBC_2.2.5",
#elif defined(__aarch64__)
    "GLIBC_2.17",
#elif defined(__i386__)
    "GLIBC_2.0",
#endif
};

int cg_real_dlsym_resolve(void) {
  if (__atomic_load_n(&cg_real_dlsym, __ATOMIC_ACQUIRE))
    return 0;
  for (size_t i = 0; i < sizeof dlsym_versions / sizeof dlsym_versions[0]; i++) {
    void *p = dlvsym(RTLD_NEXT, "dlsym", dlsym_versions[i]);
    if (p) {
      __atomic_store_n(&cg_real_dlsym, (void *(*)(void *, const char *))p, __ATOMIC_RELEASE);
      return 0;
    }
  }
  return -1;
}
