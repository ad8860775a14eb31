#include "kernel_display.h"

#include <string.h>

#include "capguard/kernel_name.h"
#include "cxa_demangle.h"


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
