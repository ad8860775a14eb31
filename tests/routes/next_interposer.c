/* A second preloaded interposer of the usual kind: it defines puts and finds
 * the real one with dlsym(RTLD_NEXT, "puts"). If capguard's dlsym resolved
 * RTLD_NEXT relative to itself instead of the caller, this library would be
 * handed its own puts back. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int puts(const char *s) {
  int (*real)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
  return real && real != puts ? real(s) : -1;
}

__attribute__((constructor)) static void check(void) {
  void *p = dlsym(RTLD_NEXT, "puts");
  Dl_info info;
  const char *where = "nothing";
  if (p && dladdr(p, &info) && info.dli_fname)
    where = strstr(info.dli_fname, "libc.so") ? "libc" : info.dli_fname;
  if (p == (void *)puts)
    where = "itself";
  char line[512];
  int n = snprintf(line, sizeof line, "next_interposer: puts resolved to %s\n", where);
  if (write(2, line, (size_t)n) < 0)
    return;
}
