/* A stand-in for an inference engine's start-up, the way vLLM + Triton do it:
 * warm up one kernel, then capture a CUDA graph during which a kernel is
 * JIT-loaded for the first time (cuModuleLoadData mid-capture) and a stale
 * kernel's module is unloaded (as a garbage-collected Triton kernel does).
 * On a driver that refuses module loads during capture the capture breaks
 * and the engine dies, far from the cause: capguard's demo shows that, and
 * then the run that priming makes work. The driver is reached the way
 * cudart reaches it: dlsym of cuGetProcAddress_v2, then everything through it.
 * Usage: demo_engine CUBIN KERNEL */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static gpa_fn gpa;

static void *get(const char *name) {
  void *p = NULL;
  if (gpa(name, &p, 12000, 0, NULL) != CUDA_SUCCESS || !p) {
    fprintf(stderr, "engine: the driver has no %s\n", name);
    exit(2);
  }
  return p;
}

static void *read_file(const char *path) {
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

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: demo_engine CUBIN KERNEL\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* in order with stderr when piped (CI logs, less) */
  void *image = read_file(argv[1]);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  gpa_fn v2 = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
  if (!image || !v2 || v2("cuGetProcAddress", (void **)&gpa, 12000, 0, NULL) != CUDA_SUCCESS) {
    fprintf(stderr, "engine: cannot start (%s)\n", image ? "no CUDA driver" : "cannot read the kernel image");
    return 2;
  }
  CUresult (*init)(unsigned) = get("cuInit");
  CUresult (*device_get)(CUdevice *, int) = get("cuDeviceGet");
  CUresult (*retain)(CUcontext *, CUdevice) = get("cuDevicePrimaryCtxRetain");
  CUresult (*set_current)(CUcontext) = get("cuCtxSetCurrent");
  CUresult (*stream_create)(CUstream *, unsigned) = get("cuStreamCreate");
  CUresult (*load)(CUmodule *, const void *) = get("cuModuleLoadData");
  CUresult (*unload)(CUmodule) = get("cuModuleUnload");
  CUresult (*get_function)(CUfunction *, CUmodule, const char *) = get("cuModuleGetFunction");
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **) = get("cuLaunchKernel");
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = get("cuStreamBeginCapture");
  CUresult (*end)(CUstream, CUgraph *) = get("cuStreamEndCapture");
  CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long) = get("cuGraphInstantiateWithFlags");
  CUresult (*graph_launch)(CUgraphExec, CUstream) = get("cuGraphLaunch");
  CUresult (*error_name)(CUresult, const char **) = get("cuGetErrorName");

  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CUmodule warm, stale, jit = NULL;
  CUfunction warm_fn, jit_fn;
  if (init(0) || device_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx) ||
      stream_create(&s, CU_STREAM_NON_BLOCKING) || load(&warm, image) || load(&stale, image) ||
      get_function(&warm_fn, warm, argv[2])) {
    fprintf(stderr, "engine: driver set-up failed\n");
    return 2;
  }
  printf("engine: warm-up done; capturing the decode graph\n");
  begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  launch(warm_fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
  CUresult r = load(&jit, image); /* first use of a kernel: the JIT loads it now */
  if (r == CUDA_SUCCESS && get_function(&jit_fn, jit, argv[2]) == CUDA_SUCCESS)
    launch(jit_fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
  unload(stale); /* an old kernel object is garbage-collected mid-capture */
  CUgraph g = NULL;
  CUresult e = end(s, &g);
  if (e != CUDA_SUCCESS) {
    const char *name = "?";
    error_name(e, &name);
    fprintf(stderr, "engine: CUDA graph capture failed: %s (error %d); giving up\n", name, (int)e);
    return 1;
  }
  CUgraphExec exec;
  if (instantiate(&exec, g, 0) || graph_launch(exec, s)) {
    fprintf(stderr, "engine: graph launch failed\n");
    return 1;
  }
  printf("engine: decode graph captured and replayed; serving\n");
  return 0;
}
