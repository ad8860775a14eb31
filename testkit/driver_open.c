#include "driver_open.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static gpa_fn gpa;
static void *libcuda;
static bool by_dlsym; /* tk_driver_open_dlsym: entry points by dlsym, not cuGetProcAddress */
static char who_buf[64] = "program";

int tk_driver_open(const char *who) {
  snprintf(who_buf, sizeof who_buf, "%s", who ? who : "program");
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  gpa_fn v2 = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
  if (!v2 || v2("cuGetProcAddress", (void **)&gpa, 12000, 0, NULL) != CUDA_SUCCESS || !gpa) {
    gpa = NULL;
    return -1;
  }
  libcuda = h;
  return 0;
}

int tk_driver_open_dlsym(const char *who) {
  snprintf(who_buf, sizeof who_buf, "%s", who ? who : "program");
  libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  by_dlsym = libcuda != NULL;
  return libcuda ? 0 : -1;
}

void *tk_driver_get(const char *name) {
  void *p = NULL;
  if (by_dlsym)
    p = dlsym(libcuda, name);
  else if (gpa && gpa(name, &p, 12000, 0, NULL) != CUDA_SUCCESS)
    p = NULL;
  if (!p) {
    fprintf(stderr, "%s: the driver has no %s\n", who_buf, name);
    exit(2);
  }
  return p;
}

void *tk_driver_handle(void) { return libcuda; }

CUresult tk_driver_setup(CUstream *s) {
  CUresult (*init)(unsigned) = tk_driver_get("cuInit");
  CUresult (*device_get)(CUdevice *, int) = tk_driver_get("cuDeviceGet");
  CUresult (*retain)(CUcontext *, CUdevice) = tk_driver_get("cuDevicePrimaryCtxRetain");
  CUresult (*set_current)(CUcontext) = tk_driver_get("cuCtxSetCurrent");
  CUdevice dev;
  CUcontext ctx;
  CUresult r;
  if ((r = init(0)) || (r = device_get(&dev, 0)) || (r = retain(&ctx, dev)) || (r = set_current(ctx)))
    return r;
  if (s) {
    CUresult (*stream_create)(CUstream *, unsigned) = tk_driver_get("cuStreamCreate");
    return stream_create(s, CU_STREAM_NON_BLOCKING);
  }
  return CUDA_SUCCESS;
}
