/* Finding another copy of capguard ahead of this one. Both copies' constructors
 * run, in an order the loader chooses; without this each wrote a start record
 * and a summary, and the log counted one process twice.
 *
 * The copy whose symbols the process binds to is the first in lookup order:
 * RTLD_DEFAULT finds its dlsym and its cuStreamBeginCapture. One object that
 * defines both is a capguard (libc defines no cu*, libcuda no dlsym); when
 * that object is not this one, this copy is the second. */
#include "other_copy.h"

#include <dlfcn.h>
#include <stddef.h>

#include "real_dlsym.h"

static const void *object_of(const void *addr) {
  Dl_info info;
  return addr && dladdr(addr, &info) ? info.dli_fbase : NULL;
}

bool cg_other_copy_first(void) {
  if (!cg_real_dlsym)
    return false;
  const void *self = object_of((const void *)&cg_other_copy_first);
  const void *by_dlsym = object_of(cg_real_dlsym(RTLD_DEFAULT, "dlsym"));
  const void *by_capture = object_of(cg_real_dlsym(RTLD_DEFAULT, "cuStreamBeginCapture"));
  return self && by_dlsym && by_dlsym == by_capture && by_dlsym != self;
}
