/* A minimal libcuda.so.1 for the doctor's tests: the few entry points the
 * doctor and capguard-selftest use. CGTEST_DRIVER_VERSION sets the version it
 * reports (default 12020), CGTEST_CUINIT what cuInit returns (default 100, no
 * device), CGTEST_GPUS the device count when cuInit succeeds. */
#include <stdlib.h>
#include <string.h>

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

int cuDriverGetVersion(int *v);
int cuDriverGetVersion(int *v) {
  *v = env_int("CGTEST_DRIVER_VERSION", 12020);
  return 0;
}
int cuInit(unsigned flags);
int cuInit(unsigned flags) {
  (void)flags;
  return env_int("CGTEST_CUINIT", 100);
}
int cuDeviceGetCount(int *n);
int cuDeviceGetCount(int *n) {
  *n = env_int("CGTEST_GPUS", 0);
  return 0;
}
/* Entry points handed out by cuGetProcAddress are the library's own, as in
 * the real driver: a static function, which no preloaded library can
 * interpose (a reference to the exported name would resolve to the shim's). */
static int module_load_data(void **module, const void *image) {
  (void)module;
  (void)image;
  return 100;
}
int cuModuleLoadData(void **module, const void *image);
int cuModuleLoadData(void **module, const void *image) { return module_load_data(module, image); }
static int get_proc_address(const char *symbol, void **pfn, int version, unsigned long long flags,
                            int *status) {
  (void)version;
  (void)flags;
  if (status)
    *status = 0;
  if (!strcmp(symbol, "cuGetProcAddress"))
    *pfn = (void *)get_proc_address;
  else if (!strcmp(symbol, "cuModuleLoadData"))
    *pfn = (void *)module_load_data;
  else {
    *pfn = NULL;
    if (status)
      *status = 1;
    return 500; /* CUDA_ERROR_NOT_FOUND */
  }
  return 0;
}
int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *status);
int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *status) {
  return get_proc_address(symbol, pfn, version, flags, status);
}
