#include "kernel_display.h"

#include <string.h>

#include "capguard/kernel_name.h"

/* The C++ ABI's demangler (libstdc++, linked for native frames too:
 * log/log_site.c); a C function by ABI, declared here because its header is C++. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

const char *cg_kernel_display(const char *name, char *buf, size_t cap) {
  if (cap)
    cg_kernel_display_name(name ? name : "", __cxa_demangle, buf, cap);
  return buf;
}

const char *cg_kernel_display_new(const char *name, char *disp, char *prev) {
  cg_kernel_display(name, disp, CG_KERNEL_DISPLAY_MAX);
  if (prev[0] && !strcmp(disp, prev))
    return NULL;
  memcpy(prev, disp, CG_KERNEL_DISPLAY_MAX);
  return disp;
}
