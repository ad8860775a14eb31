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

#include "capguard/file_read.h"
#include "driver_open.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* keep our lines in order with capguard's on stderr */
  if (argc != 3) {
    fprintf(stderr, "usage: demo_engine CUBIN KERNEL\n");
    return 2;
  }
  size_t image_size;
  void *image = cg_read_file(argv[1], (size_t)1 << 30, &image_size);
  if (!image || tk_driver_open("engine") != 0) {
    fprintf(stderr, "engine: cannot start (%s)\n", image ? "no CUDA driver" : "cannot read the kernel image");
    return 2;
  }
  CUresult (*load)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUresult (*unload)(CUmodule) = tk_driver_get("cuModuleUnload");
  CUresult (*get_function)(CUfunction *, CUmodule, const char *) = tk_driver_get("cuModuleGetFunction");
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **) = tk_driver_get("cuLaunchKernel");
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = tk_driver_get("cuStreamBeginCapture");
  CUresult (*end)(CUstream, CUgraph *) = tk_driver_get("cuStreamEndCapture");
  CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long) = tk_driver_get("cuGraphInstantiateWithFlags");
  CUresult (*graph_launch)(CUgraphExec, CUstream) = tk_driver_get("cuGraphLaunch");
  CUresult (*error_name)(CUresult, const char **) = tk_driver_get("cuGetErrorName");

  CUstream s;
  CUmodule warm, stale, jit = NULL;
  CUfunction warm_fn, jit_fn;
  if (tk_driver_setup(&s) || load(&warm, image) || load(&stale, image) ||
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
