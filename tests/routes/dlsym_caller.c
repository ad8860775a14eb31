/* A shared object that looks a name up with dlsym(RTLD_DEFAULT, ...), as a
 * framework's library does: glibc names this object in a failure's text. */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((visibility("default"))) void cg_test_dlsym_default(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  const char *err = dlerror();
  printf("lib_dlsym_found=%d\nlib_dlerror=%s\n", p != NULL, err ? err : "(none)");
}
