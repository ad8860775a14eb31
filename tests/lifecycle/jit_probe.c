/* A load with or without options inside a capture, over the fake driver
 * (linked directly).
 *
 *   jit_probe IMAGE plain     cuModuleLoadData
 *   jit_probe IMAGE none      cuModuleLoadDataEx with no options
 *   jit_probe IMAGE opts      cuModuleLoadDataEx with CU_JIT_MAX_REGISTERS 32, the wall
 *                             time and both log buffers (256 bytes each)
 *   jit_probe IMAGE opts64    the same with CU_JIT_MAX_REGISTERS 64
 *   jit_probe IMAGE smalllog  the same as opts with an info log buffer of 12 bytes
 *   jit_probe IMAGE foreign   cuModuleLoadDataEx with a global symbol table
 *                             (CU_JIT_GLOBAL_SYMBOL_NAMES/ADDRESSES/COUNT)
 *   jit_probe IMAGE lib       cuLibraryLoadData with CU_LIBRARY_BINARY_IS_PRESERVED 1,
 *                             then cuLibraryGetKernel of fake_add_one
 *   jit_probe IMAGE libjit    cuLibraryLoadData with CU_JIT_MAX_REGISTERS 32 and the wall time
 *   jit_probe IMAGE twice-hang cuModuleLoadData in a capture, then again in a second capture
 *                             (both copies kept), then prints "captured pid=N" and waits to be
 *                             killed: a learn whose program never exits
 *   jit_probe IMAGE serve     an engine that serves: a capture loading IMAGE, replayed
 *                             (cuGraphLaunch); with JIT_PROBE_WAVE=1 a load of IMAGE2
 *                             (between waves), then a second capture 200 ms later,
 *                             replayed; JIT_PROBE_IDLE_MS of serving; then a load of
 *                             IMAGE2 outside any capture (a request's first use of a
 *                             kernel), as a library with CU_LIBRARY_BINARY_IS_PRESERVED
 *                             when JIT_PROBE_LIB=1. Prints request_load=RESULT.
 * JIT_PROBE_REGS=N: the register cap of the opts modes (default 32).
 * JIT_PROBE_IMAGE2: serve's second image (default: IMAGE); @embedded: a zstd
 * fatbin held in a library's read-only data (embedded_image.c).
 *
 * Prints load_result=, end_result=, and for a module that loaded regs= (the
 * registers of its first function); with output options wall= (-1 if never
 * written), info= (the info log), info_len= (the size option after the
 * call), error= and error_len=; lib: kernel= (cuLibraryGetKernel's result). */
#include <cuda.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* embedded_image.c: a zstd fatbin in a library's read-only data */
const void *cg_embedded_image(size_t *size);

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

static char info[256], error[256];

static int env_int(const char *name) {
  const char *v = getenv(name);
  return v ? atoi(v) : 0;
}

/* One capture whose body is the first load of image, instantiated and replayed. */
static void capture_and_replay(CUstream s, const char *image) {
  CUmodule m = NULL;
  CUgraph g = NULL;
  CUgraphExec x = NULL;
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  cuModuleLoadData(&m, image);
  cuStreamEndCapture(s, &g);
  if (g && cuGraphInstantiateWithFlags(&x, g, 0) == CUDA_SUCCESS)
    cuGraphLaunch(x, s);
  cuStreamSynchronize(s);
}

static CUresult load_outside(const char *image2) {
  if (env_int("JIT_PROBE_LIB")) {
    CUlibrary lib;
    CUlibraryOption o[] = {CU_LIBRARY_BINARY_IS_PRESERVED};
    void *v[] = {(void *)(uintptr_t)1};
    return cuLibraryLoadData(&lib, image2, NULL, NULL, 0, o, v, 1);
  }
  CUmodule m;
  return cuModuleLoadData(&m, image2);
}

static int serve(CUstream s, const char *image) {
  const char *path2 = getenv("JIT_PROBE_IMAGE2");
  size_t embedded_size;
  char *image2 = !path2 ? (char *)image
                 : !strcmp(path2, "@embedded") ? (char *)cg_embedded_image(&embedded_size)
                                               : read_image(path2);
  if (!image2)
    return 3;
  capture_and_replay(s, image);
  if (env_int("JIT_PROBE_WAVE")) {
    printf("between_waves=%d\n", (int)load_outside(image2));
    usleep(200000);
    capture_and_replay(s, image);
  }
  usleep((useconds_t)env_int("JIT_PROBE_IDLE_MS") * 1000);
  printf("request_load=%d\n", (int)load_outside(image2));
  return 0;
}

/* The JIT options of the opts modes: registers, wall time, both logs. */
static unsigned jit_opts(const char *how, CUjit_option *opts, void **vals) {
  float wall = -1;
  memset(info, 'x', sizeof info);
  memset(error, 'x', sizeof error);
  info[sizeof info - 1] = error[sizeof error - 1] = 0;
  CUjit_option o[] = {CU_JIT_MAX_REGISTERS, CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER,
                      CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                      CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  size_t info_cap = !strcmp(how, "smalllog") ? 12 : sizeof info;
  const char *regs = getenv("JIT_PROBE_REGS");
  void *v[] = {(void *)(uintptr_t)(!strcmp(how, "opts64") ? 64 : regs ? atoi(regs) : 32), NULL, info, (void *)(uintptr_t)info_cap,
               error, (void *)(uintptr_t)sizeof error};
  memcpy(&v[1], &wall, sizeof wall);
  memcpy(opts, o, sizeof o);
  memcpy(vals, v, sizeof v);
  return 6;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: jit_probe IMAGE plain|none|opts|opts64|smalllog|foreign|lib|libjit\n");
    return 2;
  }
  const char *how = argv[2];
  char *image = read_image(argv[1]);
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  if (!image || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) {
    fprintf(stderr, "jit_probe: set-up failed\n");
    return 3;
  }
  CUjit_option opts[8];
  void *vals[8];
  bool with_outputs = !strcmp(how, "opts") || !strcmp(how, "opts64") || !strcmp(how, "smalllog");
  unsigned n = with_outputs ? jit_opts(how, opts, vals) : 0;
  const char *sym_names[] = {"cg_symbol"};
  void *sym_addrs[] = {(void *)&sym_names};
  CUjit_option foreign[] = {CU_JIT_GLOBAL_SYMBOL_NAMES, CU_JIT_GLOBAL_SYMBOL_ADDRESSES, CU_JIT_GLOBAL_SYMBOL_COUNT};
  void *foreign_vals[] = {sym_names, sym_addrs, (void *)(uintptr_t)1};
  CUlibraryOption lib_opt[] = {CU_LIBRARY_BINARY_IS_PRESERVED};
  void *lib_val[] = {(void *)(uintptr_t)1};
  CUjit_option lib_jit[] = {CU_JIT_MAX_REGISTERS, CU_JIT_WALL_TIME};
  float lib_wall = -1;
  void *lib_jit_vals[] = {(void *)(uintptr_t)32, NULL};
  memcpy(&lib_jit_vals[1], &lib_wall, sizeof lib_wall);
  CUmodule m = NULL;
  CUlibrary lib = NULL;
  if (!strcmp(how, "serve"))
    return serve(s, image);
  if (!strcmp(how, "twice-hang")) {
    CUmodule a = NULL, b = NULL;
    CUgraph g1 = NULL, g2 = NULL;
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUresult r1 = cuModuleLoadData(&a, image);
    cuStreamEndCapture(s, &g1);
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUresult r2 = cuModuleLoadData(&b, image);
    cuStreamEndCapture(s, &g2);
    printf("load_result=%d,%d\ncaptured pid=%d\n", (int)r1, (int)r2, (int)getpid());
    fflush(stdout);
    for (;;)
      pause();
  }
  cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUresult r = !strcmp(how, "plain")     ? cuModuleLoadData(&m, image)
               : !strcmp(how, "none")    ? cuModuleLoadDataEx(&m, image, 0, NULL, NULL)
               : !strcmp(how, "foreign") ? cuModuleLoadDataEx(&m, image, 3, foreign, foreign_vals)
               : !strcmp(how, "lib")     ? cuLibraryLoadData(&lib, image, NULL, NULL, 0, lib_opt, lib_val, 1)
               : !strcmp(how, "libjit")  ? cuLibraryLoadData(&lib, image, lib_jit, lib_jit_vals, 2, NULL, NULL, 0)
                                         : cuModuleLoadDataEx(&m, image, n, opts, vals);
  CUgraph g = NULL;
  CUresult end = cuStreamEndCapture(s, &g);
  printf("load_result=%d\nend_result=%d\n", (int)r, (int)end);
  CUfunction f;
  int regs = -1;
  if (r == CUDA_SUCCESS && lib) {
    CUkernel k;
    printf("kernel=%d\n", (int)cuLibraryGetKernel(&k, lib, "fake_add_one"));
    if (cuLibraryGetModule(&m, lib) != CUDA_SUCCESS)
      m = NULL;
  }
  if (r == CUDA_SUCCESS && m && cuModuleGetFunction(&f, m, "fake_add_one") == CUDA_SUCCESS)
    cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  printf("regs=%d\n", regs);
  if (with_outputs) {
    float wall;
    memcpy(&wall, &vals[1], sizeof wall);
    printf("wall=%g\ninfo=%s\ninfo_len=%llu\nerror=%s\nerror_len=%llu\n", wall, info,
           (unsigned long long)(uintptr_t)vals[3], error, (unsigned long long)(uintptr_t)vals[5]);
  }
  if (!strcmp(how, "libjit")) {
    memcpy(&lib_wall, &lib_jit_vals[1], sizeof lib_wall);
    printf("wall=%g\n", lib_wall);
  }
  return 0;
}
