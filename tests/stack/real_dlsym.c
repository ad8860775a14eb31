/* What the shim provides to the stack code: the real dlsym, found once. The
 * tests define it themselves the way the shim does, by symbol version, so
 * an interposed dlsym could never be picked up. */
#include <dlfcn.h>

#include "stack.h"

void *(*cg_real_dlsym)(void *, const char *);

__attribute__((constructor)) static void resolve_real_dlsym(void) {
  void *f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  cg_real_dlsym = (void *(*)(void *, const char *))f;
}
