/* An engine start-up shaped like vLLM's with Triton kernels, for the priming
 * tests over the fake driver (issue: priming that converges on a real
 * start-up). Kernels are JIT-compiled, here: PTX made in memory, each image
 * distinct bytes unless said otherwise.
 *   - warm-up: kernel W is loaded and run at one batch size, outside capture;
 *   - then one graph is captured per batch size, ten sizes, largest first,
 *     each in global mode on its own non-blocking stream; every capture
 *     launches every kernel known so far (a warm kernel is not loaded again);
 *   - capture 0: kernel A is first used (loaded through dlsym's pointer);
 *   - capture 2: kernel B, specialisation 1 (the exported cuModuleLoadData);
 *   - capture 3: library L (cuLibraryLoadData through cuGetProcAddress), its
 *     kernels taken with cuLibraryGetKernel + cuKernelGetFunction and with
 *     cuLibraryGetModule + cuModuleGetFunction;
 *   - capture 5: kernel B, specialisation 2: the same bytes as specialisation
 *     1 (two specialisations compiling to identical code), loaded again with
 *     cuModuleLoadDataEx, and it must be a module of its own: its global is
 *     not specialisation 1's;
 *   - capture 8: kernel D, which only a later capture uses.
 * After each capture the graph is instantiated and replayed, and its kernel
 * nodes must be exactly the kernels launched into it.
 * Like an engine, it stops at the first capture that breaks and exits 1.
 * With --workers N the parent (no CUDA) forks N workers that do all this and
 * fails if any fails; they share the priming file and the log.
 * Usage: startup_like [--workers N] */
#include <cuda.h>

#include "driver_open.h"
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZES 10

static void *libcuda;
static int worker_id;

__attribute__((noreturn)) static void die(const char *what, CUresult r) {
  fprintf(stderr, "startup[%d]: %s failed (CUresult %d)\n", worker_id, what, (int)r);
  exit(2);
}

/* A JIT-compiled kernel image: PTX text naming the given entries. */
static char *ptx(const char *entry1, const char *entry2) {
  char *s = NULL;
  if (asprintf(&s,
               ".version 8.0\n.target sm_80\n.address_size 64\n\n"
               ".visible .entry %s()\n{\n\tret;\n}\n%s%s%s",
               entry1, entry2 ? "\n.visible .entry " : "", entry2 ? entry2 : "", entry2 ? "()\n{\n\tret;\n}\n" : "") < 0)
    die("asprintf", CUDA_ERROR_OUT_OF_MEMORY);
  return s;
}

static struct {
  CUresult (*load_gpa)(CUmodule *, const void *);
  CUresult (*load_dlsym)(CUmodule *, const void *);
  CUresult (*load_ex)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
  CUresult (*lib_load)(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,
                       unsigned);
  CUresult (*lib_kernel)(CUkernel *, CUlibrary, const char *);
  CUresult (*kernel_fn)(CUfunction *, CUkernel);
  CUresult (*lib_module)(CUmodule *, CUlibrary);
  CUresult (*get_fn)(CUfunction *, CUmodule, const char *);
  CUresult (*get_global)(CUdeviceptr *, size_t *, CUmodule, const char *);
  CUresult (*begin)(CUstream, CUstreamCaptureMode);
  CUresult (*end)(CUstream, CUgraph *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **);
  CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*graph_launch)(CUgraphExec, CUstream);
  CUresult (*sync)(CUstream);
  CUresult (*nodes)(CUgraph, CUgraphNode *, size_t *);
  CUresult (*node_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
  CUresult (*fn_name)(const char **, CUfunction);
  CUresult (*stream_create)(CUstream *, unsigned);
} cu;

static void bind(void) {
  char who[32];
  snprintf(who, sizeof who, "startup[%d]", worker_id);
  if (tk_driver_open(who) != 0)
    die("finding the CUDA driver", CUDA_ERROR_NOT_FOUND);
  libcuda = tk_driver_handle();
  cu.load_gpa = tk_driver_get("cuModuleLoadData");
  cu.load_dlsym = (__typeof__(cu.load_dlsym))dlsym(libcuda, "cuModuleLoadData"); /* torch's route */
  cu.load_ex = tk_driver_get("cuModuleLoadDataEx");
  cu.lib_load = tk_driver_get("cuLibraryLoadData");
  cu.lib_kernel = tk_driver_get("cuLibraryGetKernel");
  cu.kernel_fn = tk_driver_get("cuKernelGetFunction");
  cu.lib_module = tk_driver_get("cuLibraryGetModule");
  cu.get_fn = tk_driver_get("cuModuleGetFunction");
  cu.get_global = tk_driver_get("cuModuleGetGlobal");
  cu.begin = tk_driver_get("cuStreamBeginCapture");
  cu.end = tk_driver_get("cuStreamEndCapture");
  cu.launch = tk_driver_get("cuLaunchKernel");
  cu.instantiate = tk_driver_get("cuGraphInstantiateWithFlags");
  cu.graph_launch = tk_driver_get("cuGraphLaunch");
  cu.sync = tk_driver_get("cuStreamSynchronize");
  cu.nodes = tk_driver_get("cuGraphGetNodes");
  cu.node_params = tk_driver_get("cuGraphKernelNodeGetParams");
  cu.fn_name = (__typeof__(cu.fn_name))dlsym(libcuda, "cuFuncGetName");
  cu.stream_create = tk_driver_get("cuStreamCreate");
  CUresult r = tk_driver_setup(NULL);
  if (r)
    die("driver set-up", r);
  if (!cu.load_dlsym || !cu.fn_name)
    die("dlsym", CUDA_ERROR_NOT_FOUND);
}

#define MAX_KERNELS 8
static CUfunction kernels[MAX_KERNELS];
static const char *kernel_names[MAX_KERNELS];
static size_t n_kernels;

static void know(CUfunction f, const char *name) {
  kernels[n_kernels] = f;
  kernel_names[n_kernels++] = name;
}

/* The graph's kernel nodes must be exactly the kernels launched into it. */
static bool graph_is_right(CUgraph g, size_t launched) {
  size_t n = 0;
  if (cu.nodes(g, NULL, &n) || n != launched)
    return false;
  CUgraphNode nodes[MAX_KERNELS];
  if (cu.nodes(g, nodes, &n))
    return false;
  for (size_t i = 0; i < n; i++) {
    CUDA_KERNEL_NODE_PARAMS p;
    const char *name = NULL;
    if (cu.node_params(nodes[i], &p) || cu.fn_name(&name, p.func) || strcmp(name, kernel_names[i]))
      return false;
  }
  return true;
}

static char *img_w, *img_a, *img_b, *img_l, *img_d;
static CUdeviceptr b1_global;

/* What capture i loads for the first time; returns the first failure. */
static CUresult first_uses(int i) {
  CUresult r = CUDA_SUCCESS;
  CUmodule m;
  CUfunction f;
  switch (i) {
  case 0:
    if (!(r = cu.load_dlsym(&m, img_a)) && !(r = cu.get_fn(&f, m, "k_a")))
      know(f, "k_a");
    break;
  case 2:
    if (!(r = cuModuleLoadData(&m, img_b)) && !(r = cu.get_fn(&f, m, "k_b")) &&
        !(r = cu.get_global(&b1_global, NULL, m, "k_b")))
      know(f, "k_b");
    break;
  case 3: {
    CUlibrary lib;
    CUkernel k;
    CUmodule lm;
    if (!(r = cu.lib_load(&lib, img_l, NULL, NULL, 0, NULL, NULL, 0)) && !(r = cu.lib_kernel(&k, lib, "k_l1")) &&
        !(r = cu.kernel_fn(&f, k))) {
      know(f, "k_l1");
      if (!(r = cu.lib_module(&lm, lib)) && !(r = cu.get_fn(&f, lm, "k_l2")))
        know(f, "k_l2");
    }
    break;
  }
  case 5: {
    CUdeviceptr g2 = 0;
    if (!(r = cu.load_ex(&m, img_b, 0, NULL, NULL)) && !(r = cu.get_fn(&f, m, "k_b")) &&
        !(r = cu.get_global(&g2, NULL, m, "k_b"))) {
      if (g2 == b1_global) {
        fprintf(stderr, "startup[%d]: specialisation 2 of k_b shares its global with specialisation 1\n",
                worker_id);
        exit(3);
      }
      know(f, "k_b");
    }
    break;
  }
  case 8:
    if (!(r = cu.load_gpa(&m, img_d)) && !(r = cu.get_fn(&f, m, "k_d")))
      know(f, "k_d");
    break;
  }
  return r;
}

static int start_up(void) {
  bind();
  img_w = ptx("k_w", NULL);
  img_a = ptx("k_a", NULL);
  img_b = ptx("k_b", NULL);
  img_l = ptx("k_l1", "k_l2");
  img_d = ptx("k_d", NULL);
  CUstream s;
  CUmodule wm;
  CUfunction wf;
  CUresult r;
  if ((r = cu.stream_create(&s, CU_STREAM_NON_BLOCKING)) || (r = cu.load_gpa(&wm, img_w)) ||
      (r = cu.get_fn(&wf, wm, "k_w")) || (r = cu.launch(wf, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL)) ||
      (r = cu.sync(s)))
    die("warm-up", r);
  know(wf, "k_w");
  for (int i = 0; i < SIZES; i++) {
    int size = 512 >> i;
    CUstream cs;
    if ((r = cu.stream_create(&cs, CU_STREAM_NON_BLOCKING)) || (r = cu.begin(cs, CU_STREAM_CAPTURE_MODE_GLOBAL)))
      die("capture begin", r);
    CUresult load = first_uses(i);
    size_t launched = 0;
    for (size_t k = 0; k < n_kernels && !load; k++, launched++)
      if ((load = cu.launch(kernels[k], (unsigned)size, 1, 1, 1, 1, 1, 0, cs, NULL, NULL)))
        break;
    CUgraph g = NULL;
    CUresult end = cu.end(cs, &g);
    if (load || end) {
      printf("startup[%d]: captured %d of %d sizes; the capture for size %d broke (load/launch %d, end %d)\n",
             worker_id, i, SIZES, size, (int)load, (int)end);
      return 1;
    }
    CUgraphExec exec;
    if (!graph_is_right(g, launched)) {
      printf("startup[%d]: the graph for size %d does not hold the kernels launched into it\n", worker_id, size);
      return 1;
    }
    if ((r = cu.instantiate(&exec, g, 0)) || (r = cu.graph_launch(exec, s)) || (r = cu.sync(s)))
      die("replay", r);
  }
  printf("startup[%d]: captured %d of %d sizes; every replay ran\n", worker_id, SIZES, SIZES);
  return 0;
}

int main(int argc, char **argv) {
  int workers = 0;
  if (argc == 3 && !strcmp(argv[1], "--workers"))
    workers = atoi(argv[2]);
  else if (argc != 1) {
    fprintf(stderr, "usage: startup_like [--workers N]\n");
    return 2;
  }
  if (workers <= 0)
    return start_up();
  fflush(stdout);
  for (int w = 0; w < workers; w++)
    if (fork() == 0) {
      worker_id = w;
      exit(start_up());
    }
  int failed = 0, status;
  while (wait(&status) > 0)
    failed += !WIFEXITED(status) || WEXITSTATUS(status);
  printf("startup: %d of %d workers failed\n", failed, workers);
  return failed ? 1 : 0;
}
