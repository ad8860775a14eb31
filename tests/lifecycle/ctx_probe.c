/* Contexts created, destroyed and reset around captures that load a module, over
 * the fake driver (linked directly).
 *
 *   ctx_probe IMAGE learn       one capture on the primary context loading IMAGE
 *   ctx_probe IMAGE turn N      N contexts, each created, used for one capture that
 *                               loads IMAGE, then destroyed (the driver hands a
 *                               destroyed context's handle to the next one)
 *   ctx_probe IMAGE alive N     N contexts created first, then one such capture on
 *                               each, then all destroyed
 *   ctx_probe IMAGE reset       the primary context: a capture loading IMAGE, then
 *                               cuDevicePrimaryCtxReset, then another; then the same
 *                               around a last cuDevicePrimaryCtxRelease
 *
 * Prints contexts= (captures made), handles= (distinct context handles), broken=
 * (captures whose end failed or whose load failed) and dead_modules= (loads that
 * returned a module the driver no longer knows: cuModuleGetFunction fails). */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUdevice dev;
static int broken, dead, made;
static void *seen[4096];
static int n_seen;

static void saw(CUcontext c) {
  for (int i = 0; i < n_seen; i++)
    if (seen[i] == (void *)c)
      return;
  if (n_seen < 4096)
    seen[n_seen++] = (void *)c;
}

static char *read_image(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = calloc(1, (size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

/* One capture on the current context that loads image; the module is checked. */
static void capture_with_load(const char *image, const char *kernel) {
  CUstream s;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    broken++;
    return;
  }
  CUmodule m = NULL;
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUresult load = cuModuleLoadData(&m, image);
  CUgraph g = NULL;
  CUresult end = cuStreamEndCapture(s, &g);
  made++;
  if (load != CUDA_SUCCESS || end != CUDA_SUCCESS)
    broken++;
  CUfunction f;
  if (load == CUDA_SUCCESS && cuModuleGetFunction(&f, m, kernel) != CUDA_SUCCESS)
    dead++;
  if (g)
    cuGraphDestroy(g);
  cuStreamDestroy(s);
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: ctx_probe IMAGE learn|reset|turn N|alive N (the kernel: CTX_PROBE_KERNEL)\n");
    return 2;
  }
  const char *kernel = getenv("CTX_PROBE_KERNEL") ? getenv("CTX_PROBE_KERNEL") : "fake_add_one";
  char *image = read_image(argv[1]);
  if (!image || cuInit(0) || cuDeviceGet(&dev, 0)) {
    fprintf(stderr, "ctx_probe: set-up failed\n");
    return 3;
  }
  const char *how = argv[2];
  int n = argc > 3 ? atoi(argv[3]) : 0;
  CUcontext c;
  if (!strcmp(how, "learn") || !strcmp(how, "reset")) {
    if (cuDevicePrimaryCtxRetain(&c, dev) || cuCtxSetCurrent(c))
      return 3;
    saw(c);
    capture_with_load(image, kernel);
    if (!strcmp(how, "reset")) {
      cuDevicePrimaryCtxReset(dev); /* its modules die; the handle stays */
      CUcontext again;
      if (cuDevicePrimaryCtxRetain(&again, dev) || cuCtxSetCurrent(again))
        return 3;
      saw(again);
      capture_with_load(image, kernel);
      cuDevicePrimaryCtxRelease(dev);
      cuDevicePrimaryCtxRelease(dev); /* the last reference: it is reset */
      if (cuDevicePrimaryCtxRetain(&again, dev) || cuCtxSetCurrent(again))
        return 3;
      saw(again);
      capture_with_load(image, kernel);
    }
  } else if (!strcmp(how, "turn")) {
    for (int i = 0; i < n; i++) {
      if (cuCtxCreate(&c, NULL, 0, dev) != CUDA_SUCCESS)
        return 3;
      saw(c);
      capture_with_load(image, kernel);
      cuCtxDestroy(c);
    }
  } else if (!strcmp(how, "alive")) {
    CUcontext *all = calloc((size_t)n, sizeof *all);
    for (int i = 0; i < n; i++)
      if (!all || cuCtxCreate(&all[i], NULL, 0, dev) != CUDA_SUCCESS)
        return 3;
    for (int i = 0; i < n; i++) {
      cuCtxSetCurrent(all[i]);
      saw(all[i]);
      capture_with_load(image, kernel);
    }
    for (int i = 0; i < n; i++)
      cuCtxDestroy(all[i]);
    free(all);
  } else {
    return 2;
  }
  printf("contexts=%d\nhandles=%d\nbroken=%d\ndead_modules=%d\n", made, n_seen, broken, dead);
  return 0;
}
