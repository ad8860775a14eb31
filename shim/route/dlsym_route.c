/* The C half of capguard's dlsym (see dlsym_hook.S): what to answer when
 * someone looks up a "cu..." name. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>

#include "config.h"
#include "driver.h"
#include "entry_points.h"
#include "real_dlsym.h"

#define PASS_THROUGH ((void *)0)
#define ANSWER_NULL ((void *)1)

void *cg_dlsym_driver_symbol(void *handle, const char *name, const void *caller)
    __attribute__((visibility("hidden")));

/* What glibc answers for name without capguard's own export: another
 * object's symbol if one has it, else NULL with glibc's own "undefined
 * symbol" text in dlerror() -- not the error left by capguard's own look for
 * libcuda.so.1. glibc's text names the caller's object. For a caller that is
 * a shared object, the lookup is made in that object's own scope through a
 * handle to it (capguard's preloaded export is not in that scope), which
 * fails with the same words; the handle is closed before the lookup, since
 * any dl* call clears dlerror(), and stays valid: the object is running. The
 * main program's scope holds capguard's export, so for it the lookup is made
 * after capguard, and the text names libcapguard.so instead of the program. */
static void *absent(const char *name, const void *caller, void *wrapper) {
  Dl_info info;
  struct link_map *lm = NULL;
  if (caller && dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm && lm->l_name && lm->l_name[0]) {
    void *h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
      dlclose(h);
      void *p = cg_real_dlsym(h, name);
      if (p != wrapper)
        return p ? p : ANSWER_NULL;
    }
  }
  void *p = cg_real_dlsym(RTLD_NEXT, name);
  return p ? p : ANSWER_NULL;
}

void *cg_dlsym_driver_symbol(void *handle, const char *name, const void *caller) {
  int ep = cg_ep_find(name);
  if (ep < 0 || cg_cfg.mode == CG_RUN_OFF || cg_real_dlsym_resolve())
    return PASS_THROUGH;
  void *p = (handle == RTLD_DEFAULT || handle == RTLD_NEXT) ? cg_ep_wrapper(ep) : cg_real_dlsym(handle, name);
  if (!p)
    return ANSWER_NULL; /* glibc has set dlerror() for the caller */
  if (p == cg_ep_wrapper(ep)) {
    /* The scope searched holds capguard's own export of this name, which
     * glibc would find even in a process without the driver. Answer as if
     * capguard were absent: the wrapper when the driver has this entry
     * point, else NULL. */
    if (!cg_driver_loaded() || !cg_driver_ready() || !cg_ep_real[ep])
      return absent(name, caller, p);
    return p;
  }
  if (!cg_driver_loaded())
    return p; /* not the driver's symbol: someone else's, untouched */
  return cg_wrap_pointer(p);
}
