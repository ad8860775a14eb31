/* Finding another copy of capguard ahead of this one. Both copies' constructors
 * run, in an order the loader chooses; without this each wrote a start record
 * and a summary, and the log counted one process twice.
 *
 * The copy whose symbols the process binds to is the first in lookup order:
 * the global scope (the main program's search list, LD_PRELOAD's objects
 * right after the program) finds its dlsym and its cuStreamBeginCapture.
 * One object that defines both is a capguard (libc defines no cu*, libcuda
 * no dlsym); when that object is not this one, this copy is the second.
 *
 * The lookup goes through the main program's handle, not RTLD_DEFAULT: the
 * shim is linked -Bsymbolic (DT_SYMBOLIC), and glibc puts such an object
 * itself first in its own scope, so RTLD_DEFAULT asked from inside any copy
 * finds that copy's dlsym first, and every copy took itself for the first. */
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
  /* the main program's handle: no file opened, the loaded program's map */
  void *global = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
  if (!global)
    return false;
  const void *self = object_of((const void *)&cg_other_copy_first);
  const void *by_dlsym = object_of(cg_real_dlsym(global, "dlsym"));
  const void *by_capture = object_of(cg_real_dlsym(global, "cuStreamBeginCapture"));
  dlclose(global);
  return self && by_dlsym && by_dlsym == by_capture && by_dlsym != self;
}
