/* stale_layouts.h: a map from function handle to its layout, under this
 * file's lock (held across the driver's answers for one function: queries
 * only, no stream work). */
#include "locks.h"
#include "stale_layouts.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "driver.h"
#include "stale_index.h"
#include "stale_params.h"

#define MAX_KEPT 8192 /* functions whose layout is kept; past it, asked each time */

typedef struct {
  int n; /* -1: the driver cannot split this function */
  cg_param_slot slots[];
} kept_layout;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cg_index kept;

/* cuFuncGetParamInfo splits parameters on drivers 12.4 and later; before,
 * the layouts read from the images the program loaded (stale_params.c). */
static bool driver_splits(void) { return cg_drv.FuncGetParamInfo && cg_driver_version() >= 12040; }

bool cg_stale_layouts_ready(void) { return driver_splits() || cg_stale_params_known(); }

/* The i-th parameter of f, a CUfunction or (cuLaunchKernel accepts one) a
 * CUkernel: what the driver answers for the one, else for the other. */
static CUresult param_info(CUfunction f, size_t i, size_t *off, size_t *size) {
  CUresult r = cg_drv.FuncGetParamInfo(f, i, off, size);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_INVALID_VALUE && cg_drv.KernelGetParamInfo)
    r = cg_drv.KernelGetParamInfo((CUkernel)f, i, off, size);
  return r;
}

/* f's layout, from the driver or the image: how many, -1 unknown. */
static int ask(CUfunction f, cg_param_slot *out, int max) {
  if (!driver_splits())
    return cg_stale_params_of(f, out, max);
  for (int n = 0; n < max; n++) {
    size_t off = 0, size = 0;
    CUresult r = param_info(f, (size_t)n, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE)
      return n; /* past the last parameter (or none) */
    if (r != CUDA_SUCCESS || off > UINT16_MAX || size > UINT16_MAX)
      return -1; /* a function the driver cannot split */
    out[n].offset = (uint16_t)off;
    out[n].size = (uint16_t)size;
  }
  return -1; /* more than max: not split */
}

int cg_stale_layout(CUfunction f, cg_param_slot *out, int max) {
  uint64_t key = (uint64_t)(uintptr_t)f;
  cg_lock(&lock);
  size_t pos = 0;
  const kept_layout *k = cg_index_next(&kept, key, &pos);
  int n;
  if (k) {
    n = k->n <= max ? k->n : -1;
    if (n > 0)
      memcpy(out, k->slots, (size_t)n * sizeof *out);
  } else {
    n = ask(f, out, max);
    kept_layout *add = kept.n < MAX_KEPT ? malloc(sizeof *add + (size_t)(n > 0 ? n : 0) * sizeof *out) : NULL;
    if (add) {
      add->n = n;
      if (n > 0)
        memcpy(add->slots, out, (size_t)n * sizeof *out);
      if (!cg_index_put(&kept, key, add))
        free(add);
    }
  }
  cg_unlock(&lock);
  return n;
}

void cg_stale_layouts_forget(void) {
  cg_lock(&lock);
  for (size_t i = 0; i < kept.cap; i++)
    if (kept.slots[i].key)
      free(kept.slots[i].val);
  cg_index_clear(&kept);
  cg_unlock(&lock);
}

void cg_stale_layouts_atfork_child(void) { pthread_mutex_init(&lock, NULL); }
