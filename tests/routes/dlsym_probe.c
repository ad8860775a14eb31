/* dlsym(RTLD_DEFAULT, NAME) from the main program and from a shared object
 * (dlsym_caller.c), then dlsym on that object's handle; prints whether each
 * was found and what dlerror() said. */
#include <dlfcn.h>
#include <stdio.h>

void cg_test_dlsym_default(const char *name);

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dlsym_probe NAME\n");
    return 2;
  }
  void *p = dlsym(RTLD_DEFAULT, argv[1]);
  const char *err = dlerror();
  printf("main_dlsym_found=%d\nmain_dlerror=%s\n", p != NULL, err ? err : "(none)");
  cg_test_dlsym_default(argv[1]);
  /* and on the shared object's own handle */
  void *h = dlopen("libdlsym_caller.so", RTLD_NOW | RTLD_NOLOAD);
  p = h ? dlsym(h, argv[1]) : NULL;
  err = dlerror();
  printf("handle_dlsym_found=%d\nhandle_dlerror=%s\n", p != NULL, err ? err : "(none)");
  return 0;
}
