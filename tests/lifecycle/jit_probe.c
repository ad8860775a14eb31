/* cuModuleLoadDataEx inside a capture, with or without JIT options, over the fake
 * driver (linked directly).
 *
 *   jit_probe IMAGE plain   cuModuleLoadData (records the image in the priming file)
 *   jit_probe IMAGE none    cuModuleLoadDataEx with no options
 *   jit_probe IMAGE opts    cuModuleLoadDataEx with CU_JIT_MAX_REGISTERS 32, the wall
 *                           time and both log buffers
 *
 * Prints load_result=, end_result=, and for a module that loaded regs= (the
 * registers of its first function) and, with options, wall= (-1 if never
 * written), info= (the info log) and info_len= (the size option after the call). */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_image(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = calloc(1, (size_t)n + 1); /* PTX is text: NUL-ended */
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: jit_probe IMAGE plain|none|opts\n");
    return 2;
  }
  char *image = read_image(argv[1]);
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  if (!image || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) {
    fprintf(stderr, "jit_probe: set-up failed\n");
    return 3;
  }
  char info[256], error[256];
  memset(info, 'x', sizeof info);
  memset(error, 'x', sizeof error);
  info[sizeof info - 1] = error[sizeof error - 1] = 0;
  float wall = -1;
  CUjit_option opts[] = {CU_JIT_MAX_REGISTERS, CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER,
                         CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {(void *)(uintptr_t)32, NULL, info, (void *)(uintptr_t)sizeof info, error,
                  (void *)(uintptr_t)sizeof error};
  memcpy(&vals[1], &wall, sizeof wall);
  CUmodule m = NULL;
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUresult r = !strcmp(argv[2], "plain") ? cuModuleLoadData(&m, image)
               : !strcmp(argv[2], "none") ? cuModuleLoadDataEx(&m, image, 0, NULL, NULL)
                                          : cuModuleLoadDataEx(&m, image, 6, opts, vals);
  CUgraph g = NULL;
  CUresult end = cuStreamEndCapture(s, &g);
  printf("load_result=%d\nend_result=%d\n", (int)r, (int)end);
  CUfunction f;
  int regs = -1;
  if (r == CUDA_SUCCESS && cuModuleGetFunction(&f, m, "fake_add_one") == CUDA_SUCCESS)
    cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  printf("regs=%d\n", regs);
  if (!strcmp(argv[2], "opts")) {
    memcpy(&wall, &vals[1], sizeof wall);
    printf("wall=%g\ninfo=%s\ninfo_len=%llu\n", wall, info, (unsigned long long)(uintptr_t)vals[3]);
  }
  return 0;
}
