/* What dies with a context. The driver unloads a context's modules when it is
 * destroyed, and when the primary context is reset (cuDevicePrimaryCtxReset,
 * or the last cuDevicePrimaryCtxRelease). The priming pools are kept by
 * CUcontext handle, and the driver hands a destroyed context's handle to the
 * next one it creates (a reset primary keeps its own): a pool left behind
 * would serve the new context modules that died with the old, or hold its
 * handed-out slots forever (13 of 20 contexts created and destroyed in turn
 * broke on 12.2 with the image primed). So the pool goes with its context. */
#include "context_end.h"

#include "driver.h"
#include "priming.h"

CUcontext cg_context_end_enter(CUcontext ctx, CUdevice dev, cg_context_end how) {
  if (!cg_priming_has_pools())
    return NULL;
  if (how == CG_CTX_DESTROYED)
    return ctx;
  /* The primary context's handle: retained and released at once (net zero,
   * and only when it is active, so the release never ends it), inside the
   * program's own call that ends it. */
  unsigned flags = 0;
  int active = 0;
  CUcontext primary = NULL;
  if (!cg_drv.DevicePrimaryCtxGetState || !cg_drv.DevicePrimaryCtxRetain || !cg_drv.DevicePrimaryCtxRelease ||
      cg_drv.DevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active ||
      cg_drv.DevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS)
    return NULL;
  cg_drv.DevicePrimaryCtxRelease(dev);
  return primary;
}

void cg_context_end_leave(CUcontext ctx, CUdevice dev, cg_context_end how, CUresult r) {
  if (r != CUDA_SUCCESS || !ctx)
    return;
  if (how == CG_CTX_PRIMARY_RELEASE) { /* not the last reference: it lives on */
    unsigned flags = 0;
    int active = 1;
    if (cg_drv.DevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || active)
      return;
  }
  cg_priming_context_gone(ctx);
}
