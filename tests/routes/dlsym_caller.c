/* A shared object that looks a name up with dlsym(RTLD_DEFAULT, ...), as a
 * framework's library does: glibc names this object in a failure's text.
 * It also defines a symbol named like a driver entry point (a stub, as some
 * libraries carry), which a lookup without the driver must find. */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((visibility("default"))) void cg_test_dlsym_default(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  const char *err = dlerror();
  printf("lib_dlsym_found=%d\nlib_dlerror=%s\n", p != NULL, err ? err : "(none)");
}

/* Not the driver's: found by name when no libcuda is loaded. */
__attribute__((visibility("default"))) int cuLibraryUnload(void *library) {
  (void)library;
  return 999;
}
