/* fakecuda: initialisation, the one fake device, and contexts. */
#include "fake_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fc_initialized;
static struct fc_ctx *primary_ctx;
static _Thread_local struct fc_ctx *current_ctx;

CUresult fc_need_init(void)
{
  return fc_initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

struct fc_ctx *fc_current_ctx(void)
{
  if (current_ctx != NULL && fc_lookup(current_ctx, FC_CTX) == NULL)
    current_ctx = NULL;             /* destroyed meanwhile */
  return current_ctx;
}

CUresult fc_need_ctx(void)
{
  if (!fc_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  return fc_current_ctx() != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

FC_EXPORT CUresult CUDAAPI cuInit(unsigned int flags)
{
  FC_BEGIN;
  CUresult rc = CUDA_SUCCESS;
  if (flags != 0)
    rc = CUDA_ERROR_INVALID_VALUE;
  else
    fc_initialized = 1;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
  FC_BEGIN;
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  if (driverVersion != NULL) {
    *driverVersion = fc_env_driver_version();
    rc = CUDA_SUCCESS;
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && count == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *count = 1;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && device == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (rc == CUDA_SUCCESS && ordinal != 0)
    rc = CUDA_ERROR_INVALID_DEVICE;
  if (rc == CUDA_SUCCESS)
    *device = 0;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && (name == NULL || len <= 0))
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (rc == CUDA_SUCCESS && dev != 0)
    rc = CUDA_ERROR_INVALID_DEVICE;
  if (rc == CUDA_SUCCESS)
    snprintf(name, (size_t)len, "fakecuda device (sm_%d)", fc_env_sm());
  FC_END(rc);
}

/* Values of an H100-like part for the attributes frameworks commonly ask; 0 otherwise. */
static int attribute_value(CUdevice_attribute a)
{
  int sm = fc_env_sm();
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return sm / 10;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return sm % 10;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
  default: return 0;
  }
}

FC_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && (pi == NULL || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX))
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (rc == CUDA_SUCCESS && dev != 0)
    rc = CUDA_ERROR_INVALID_DEVICE;
  if (rc == CUDA_SUCCESS)
    *pi = attribute_value(attrib);
  FC_END(rc);
}

/* Destroyed contexts, whose handles the next creates are handed again, the most
 * recent first, as the real driver reuses a destroyed context's address; kept here
 * rather than left to malloc, whose reuse a sanitizer's quarantine would delay. */
#define FC_RECYCLED_CTX 64
static struct fc_ctx *recycled[FC_RECYCLED_CTX];
static int n_recycled;

static struct fc_ctx *ctx_new(int primary)
{
  struct fc_ctx *c = !primary && n_recycled > 0 ? recycled[--n_recycled] : calloc(1, sizeof(*c));
  if (c != NULL)
    memset(c, 0, sizeof(*c));
  if (c == NULL)
    return NULL;
  c->primary = primary;
  fc_register(&c->h, c, FC_CTX);
  return c;
}

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && pctx == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (rc == CUDA_SUCCESS && dev != 0)
    rc = CUDA_ERROR_INVALID_DEVICE;
  if (rc == CUDA_SUCCESS && primary_ctx == NULL && (primary_ctx = ctx_new(1)) == NULL)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (rc == CUDA_SUCCESS) {
    primary_ctx->refcount++;
    primary_ctx->active = 1;
    *pctx = (CUcontext)primary_ctx;
  }
  FC_END(rc);
}

/* The primary context's life, as the driver API documents it: the last release
 * resets it, and so does cuDevicePrimaryCtxReset. A reset context keeps its handle
 * (the same CUcontext is retained again, and stays usable in the fake) but what lived
 * in it dies: its modules are unloaded. */
static void primary_reset(void)
{
  fc_modules_die_with(primary_ctx);
  primary_ctx->active = 0;
}

static CUresult primary_release(CUdevice dev)
{
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && dev != 0)
    rc = CUDA_ERROR_INVALID_DEVICE;
  else if (rc == CUDA_SUCCESS && (primary_ctx == NULL || primary_ctx->refcount == 0))
    rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS && --primary_ctx->refcount == 0)
    primary_reset();
  return rc;
}

static CUresult primary_reset_call(CUdevice dev)
{
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && dev != 0)
    rc = CUDA_ERROR_INVALID_DEVICE;
  if (rc == CUDA_SUCCESS && primary_ctx != NULL)
    primary_reset();
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
  FC_BEGIN;
  FC_END(primary_reset_call(dev));
}

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
  FC_BEGIN;
  FC_END(primary_reset_call(dev));
}

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && dev != 0)
    rc = CUDA_ERROR_INVALID_DEVICE;
  else if (rc == CUDA_SUCCESS && (flags == NULL || active == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    *flags = 0;
    *active = primary_ctx != NULL && primary_ctx->active;
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
  FC_BEGIN;
  FC_END(primary_release(dev));
}

FC_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
  FC_BEGIN;
  FC_END(primary_release(dev));
}

static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && pctx == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS && dev != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_ctx *c = ctx_new(0);
  if (c == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  current_ctx = c;
  *pctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
  FC_BEGIN;
  (void)flags;
  FC_END(ctx_create(pctx, dev));
}

FC_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                          int numParams, unsigned int flags, CUdevice dev)
{
  FC_BEGIN;
  (void)paramsArray; (void)numParams; (void)flags;
  FC_END(ctx_create(pctx, dev));
}

FC_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                          unsigned int flags, CUdevice dev)
{
  FC_BEGIN;
  (void)ctxCreateParams; (void)flags;
  FC_END(ctx_create(pctx, dev));
}

static CUresult ctx_destroy(CUcontext ctx)
{
  CUresult rc = fc_need_init();
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_handle *h = fc_lookup(ctx, FC_CTX);
  if (h == NULL || ((struct fc_ctx *)h)->primary)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (current_ctx == (struct fc_ctx *)h)
    current_ctx = NULL;
  /* What lived in the context dies with it; the handle is freed, and the
   * allocator hands the same address to a later context (a recycled handle). */
  fc_modules_die_with((struct fc_ctx *)h);
  fc_unregister(h);
  if (n_recycled < FC_RECYCLED_CTX)
    recycled[n_recycled++] = (struct fc_ctx *)h;
  else
    free(h);
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
  FC_BEGIN;
  FC_END(ctx_destroy(ctx));
}

FC_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
  FC_BEGIN;
  FC_END(ctx_destroy(ctx));
}

FC_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && ctx != NULL && fc_lookup(ctx, FC_CTX) == NULL)
    rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS)
    current_ctx = (struct fc_ctx *)ctx;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  if (rc == CUDA_SUCCESS && pctx == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *pctx = (CUcontext)fc_current_ctx();
  FC_END(rc);
}

static CUresult ctx_get_device(CUdevice *device, CUcontext ctx)
{
  CUresult rc = ctx == NULL ? fc_need_ctx() : fc_need_init();
  if (rc == CUDA_SUCCESS && ctx != NULL && fc_lookup(ctx, FC_CTX) == NULL)
    rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS && device == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *device = 0;
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
  FC_BEGIN;
  FC_END(ctx_get_device(device, NULL));
}

FC_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
  FC_BEGIN;
  FC_END(ctx_get_device(device, ctx));
}

struct fc_ctx *fc_ctx_resolve(CUcontext ctx)
{
  return ctx == NULL ? fc_current_ctx() : (struct fc_ctx *)fc_lookup(ctx, FC_CTX);
}

/* Ground truth: a context-wide sync is refused, and breaks the captures, while a capture
 * is open — whatever the calling thread's mode (relaxed or swapped to relaxed too). The
 * fake counts only the captures of the context synchronised (one device, one context in
 * the measurement; which contexts a sync looks at is the fake's choice). */
static CUresult ctx_sync(CUcontext ctx)
{
  CUresult rc = ctx == NULL ? fc_need_ctx() : fc_need_init();
  struct fc_ctx *c = fc_ctx_resolve(ctx);
  if (rc == CUDA_SUCCESS && c == NULL)
    rc = CUDA_ERROR_INVALID_CONTEXT;
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_in_ctx(c);
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
  fc_sync_block();
  fc_hold_wait(NULL);
  FC_BEGIN;
  FC_END(ctx_sync(NULL));
}

FC_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
  fc_sync_block();
  fc_hold_wait(NULL);
  FC_BEGIN;
  FC_END(ctx_sync(ctx));
}
