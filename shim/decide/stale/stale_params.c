/* stale_params.h. Kept only where needed: with CAPGUARD_STALE=1, on a driver
 * without cuFuncGetParamInfo. A load pays one inspection of its image (the
 * headers and the parameter table's section, no copy of the image). */
#include "locks.h"
#include "stale_params.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "warn.h"

#define MODULES 256
#define KERNELS 64 /* per module; Triton's hold one, a library's more */

typedef struct {
  char name[96];
  int n;
  cg_param_slot slots[CG_STALE_MAX_PARAMS];
} kernel_layout;

typedef struct {
  uint64_t module;
  int n;
  kernel_layout *kernels;
} module_layouts;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static module_layouts modules[MODULES];
static unsigned next_slot;
static bool any;

static bool needed(void) { return cg_cfg.stale && cg_driver_version() < 12040 && cg_drv.FuncGetModule; }

void cg_stale_module_loaded(void *handle, bool library, const void *image) {
  if (!handle || !image || !needed())
    return;
  CUmodule mod = (CUmodule)handle;
  if (library && (!cg_drv.LibraryGetModule || cg_drv.LibraryGetModule(&mod, (CUlibrary)handle) != CUDA_SUCCESS))
    return;
  cg_image_info *info = malloc(sizeof *info);
  kernel_layout *ks = calloc(KERNELS, sizeof *ks);
  if (!info || !ks)
    cg_warn_oom("a module's parameter layouts (stale check)");
  if (!info || !ks || cg_image_inspect(image, CG_IMAGE_MAX_BYTES, info) != 0 || info->kind != CG_IMAGE_CUBIN) {
    free(info);
    free(ks);
    return;
  }
  int n = 0;
  for (const char *k = cg_image_first_kernel(info); k && n < KERNELS; k = cg_image_next_kernel(info, k)) {
    int np = cg_image_kernel_params(info, k, ks[n].slots, CG_STALE_MAX_PARAMS);
    if (np < 0 || strlen(k) >= sizeof ks[n].name)
      continue;
    memcpy(ks[n].name, k, strlen(k) + 1);
    ks[n].n = np;
    n++;
  }
  free(info);
  cg_lock(&lock);
  module_layouts *m = &modules[next_slot++ % MODULES];
  free(m->kernels); /* the oldest module's: past the bound its kernels are not split */
  m->module = (uint64_t)(uintptr_t)mod;
  m->n = n;
  m->kernels = ks;
  __atomic_store_n(&any, true, __ATOMIC_RELAXED);
  cg_unlock(&lock);
}

void cg_stale_params_atfork_child(void) { pthread_mutex_init(&lock, NULL); }

bool cg_stale_params_known(void) { return __atomic_load_n(&any, __ATOMIC_RELAXED); }

/* Under the lock: the kept layout of f, or NULL. */
static const kernel_layout *layout_of(CUfunction f) {
  CUmodule mod = NULL;
  if (!cg_drv.FuncGetModule || !cg_drv.ModuleGetFunction || cg_drv.FuncGetModule(&mod, f) != CUDA_SUCCESS)
    return NULL;
  for (unsigned i = 0; i < MODULES; i++) {
    const module_layouts *m = &modules[i];
    if (!m->kernels || m->module != (uint64_t)(uintptr_t)mod)
      continue;
    for (int k = 0; k < m->n; k++) {
      CUfunction g = NULL;
      if (cg_drv.ModuleGetFunction(&g, mod, m->kernels[k].name) == CUDA_SUCCESS && g == f)
        return &m->kernels[k];
    }
  }
  return NULL;
}

int cg_stale_params_of(CUfunction f, cg_param_slot *out, int max) {
  cg_lock(&lock);
  const kernel_layout *k = layout_of(f);
  int n = k && k->n <= max ? k->n : -1;
  if (n >= 0)
    memcpy(out, k->slots, (size_t)n * sizeof *out);
  cg_unlock(&lock);
  return n;
}

bool cg_stale_params_name(CUfunction f, char *buf, size_t cap) {
  cg_lock(&lock);
  const kernel_layout *k = layout_of(f);
  size_t len = k ? strlen(k->name) : 0;
  bool ok = k && len < cap;
  if (ok)
    memcpy(buf, k->name, len + 1);
  cg_unlock(&lock);
  return ok;
}
