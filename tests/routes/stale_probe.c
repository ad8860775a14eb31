/* The stale-pointer check's cases over the fake driver: captures
 * cg_test_fill(y, 1.0f, n) (tests/data/kernels.cu) on a stream, instantiates
 * the graph, launches it once, then (--op):
 *   free:            cuMemFree(y)                                  named
 *   realloc-launch:  cuMemFree(y), cuMemAlloc of the same size (the same
 *                    address, another buffer), cuGraphLaunch      named twice
 *   free-async:      y from cuMemAllocAsync; cuMemFreeAsync(y) on another
 *                    stream                                        named
 *   destroy-first:   cuGraphExecDestroy, then cuMemFree(y)         silent
 *   healthy:         launch again, free memory no graph reads, destroy the
 *                    exec, free y                                   silent
 *   two-execs:       the graph instantiated twice, y freed          named per exec
 *   copies:          the capture also copies y into z (cuMemcpyDtoDAsync) and
 *                    sets w (cuMemsetD8Async); w, then y freed    named (the
 *                    memset node, the memcpy node's source, the kernel)
 *   by-hand:         the graph built with cuGraphAddKernelNode (no capture)
 *                    and instantiated, y freed                       named
 *   extra:           the launch's arguments given as one buffer (`extra`,
 *                    as cuBLAS launches), y freed                  named
 *   vmm-healthy:     y in a piece mapped with cuMemMap (expandable segments'
 *                    way); another piece of the range unmapped and released,
 *                    a new one mapped, launches                   silent
 *   vmm-unmap:       y's piece unmapped and released, a launch    named once
 *                    at the launch (the piece, its size)
 *   vmm-remap:       y's piece unmapped, released, another physical
 *                    allocation mapped at the same address, a launch  named
 *   vmm-word:        as vmm-remap, the kernel cg_test_axpy(a, y, word, n),
 *                    word an address in the reserved range where nothing is
 *                    mapped (a GEMM's packed integers can be one)  named
 *                    once, as the piece
 *   race:            threads racing (stale_race.c): each captures,
 *                    instantiates, launches and frees its own buffer under its
 *                    live exec, over and over, while another maps and unmaps
 *                    pieces and destroys nothing it does not own  each free named
 * Prints each call's result as name=code; exits 2 on a failed setup call
 * (probe_check.h).
 * Usage: stale_probe --route direct --op OP [--cubin FILE] */
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_check.h"
#include "stale_race.h"
#define SAY(name, call) printf("%s=%d\n", name, (int)(call))

#define N 256

static unsigned char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "stale_probe: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
    exit(1);
  fclose(f);
  return b;
}

#define G ((size_t)2 << 20) /* the fake's granularity */

/* The cubin's module: from memory, or with CG_LOAD_FROM_FILE from the file
 * (before 12.4 capguard keeps no layout for it, so its nodes cannot be read;
 * one image loaded from memory beside it keeps the walk going). */
static CUmodule load_module(const char *cubin) {
  CUmodule mod;
  if (getenv("CG_LOAD_FROM_FILE")) {
    CUmodule other;
    CHECK(cuModuleLoadData(&other, read_file(cubin)));
    CHECK(cuModuleLoad(&mod, cubin));
  } else {
    CHECK(cuModuleLoadData(&mod, read_file(cubin)));
  }
  return mod;
}

/* y in the first piece of a reserved range (handle ha), a second piece beside it (hb). */
static CUdeviceptr vmm_setup(CUdeviceptr *base, CUmemGenericAllocationHandle *ha, CUmemGenericAllocationHandle *hb,
                             const CUmemAllocationProp *prop) {
  CHECK(cuMemAddressReserve(base, 16 * G, 0, 0, 0));
  CHECK(cuMemCreate(ha, G, prop, 0));
  CHECK(cuMemCreate(hb, G, prop, 0));
  CHECK(cuMemMap(*base, G, 0, *ha, 0));
  CHECK(cuMemMap(*base + G, G, 0, *hb, 0));
  return *base + 4096;
}

/* The vmm-* ops after the first launch: y lies in the piece base (handle ha),
 * a second piece at base + G (hb). */
static void vmm_op(const char *op, CUgraphExec x, CUstream s, CUdeviceptr base, CUmemGenericAllocationHandle ha,
                   CUmemGenericAllocationHandle hb, const CUmemAllocationProp *prop) {
  CUmemGenericAllocationHandle hc;
  if (!strcmp(op, "vmm-healthy")) {
    SAY("unmap_other", cuMemUnmap(base + G, G)); /* the segment shrinks elsewhere */
    SAY("release_other", cuMemRelease(hb));
    CHECK(cuMemCreate(&hc, 2 * G, prop, 0));
    SAY("map_new", cuMemMap(base + 4 * G, 2 * G, 0, hc, 0)); /* and grows */
  } else {
    SAY("unmap", cuMemUnmap(base, G));
    SAY("release", cuMemRelease(ha));
    if (!strcmp(op, "vmm-remap") || !strcmp(op, "vmm-word")) {
      CHECK(cuMemCreate(&hc, G, prop, 0));
      SAY("remap", cuMemMap(base, G, 0, hc, 0));
    }
  }
  SAY("relaunch", cuGraphLaunch(x, s));
  SAY("relaunch2", cuGraphLaunch(x, s)); /* a finding reported once per exec and piece */
}

/* --op and --cubin (or CG_CUBIN); false, said, without a cubin. */
static bool parse_args(int argc, char **argv, const char **op, const char **cubin) {
  *op = "free";
  *cubin = getenv("CG_CUBIN");
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--op"))
      *op = argv[i + 1];
    else if (!strcmp(argv[i], "--cubin"))
      *cubin = argv[i + 1];
  }
  if (!*cubin)
    fprintf(stderr, "stale_probe: no cubin (--cubin or CG_CUBIN)\n");
  return *cubin != NULL;
}

int main(int argc, char **argv) {
  const char *op, *cubin;
  if (!parse_args(argc, argv, &op, &cubin))
    return 2;
  probe_primary_context();
  CUmodule mod = load_module(cubin);
  if (!strcmp(op, "race"))
    return stale_race(mod);
  CUfunction fill;
  const char *kernel = getenv("CG_KERNEL"); /* the fill kernel under another name (a C++ one) */
  CHECK(cuModuleGetFunction(&fill, mod, kernel && *kernel ? kernel : "cg_test_fill"));
  CUstream s, other;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  int async = !strcmp(op, "free-async");
  CUdeviceptr y, unrelated, z, w;
  if (async)
    CHECK(cuMemAllocAsync(&y, N * sizeof(float), s));
  else
    CHECK(cuMemAlloc(&y, N * sizeof(float)));
  CHECK(cuMemAlloc(&unrelated, 3 * N * sizeof(float)));
  CHECK(cuMemAlloc(&z, 5 * N * sizeof(float)));
  CHECK(cuMemAlloc(&w, 7 * N * sizeof(float)));
  int vmm = !strncmp(op, "vmm-", 4);
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle ha = 0, hb = 0;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  if (vmm)
    y = vmm_setup(&base, &ha, &hb, &prop);
  int copies = !strcmp(op, "copies");
  float v = 1.0f;
  int n = N;
  CUdeviceptr word = base + 8 * G; /* the fake runs no kernel: only read, as a word */
  void *axpy_params[] = {&v, &y, &word, &n};
  int by_word = !strcmp(op, "vmm-word");
  if (by_word)
    CHECK(cuModuleGetFunction(&fill, mod, "cg_test_axpy"));
  void *params[] = {&y, &v, &n};
  CUgraph g;
  if (!strcmp(op, "by-hand")) {
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = fill;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = N;
    kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = params;
    CUgraphNode node;
    CHECK(cuGraphCreate(&g, 0));
    CHECK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
  } else {
    unsigned char buf[16]; /* cg_test_fill's layout: 0/8, 8/4, 12/4 */
    memcpy(buf, &y, 8);
    memcpy(buf + 8, &v, 4);
    memcpy(buf + 12, &n, 4);
    size_t len = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len, CU_LAUNCH_PARAM_END};
    int by_buffer = !strcmp(op, "extra");
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuLaunchKernel(fill, 1, 1, 1, N, 1, 1, 0, s, by_buffer ? NULL : by_word ? axpy_params : params,
                         by_buffer ? extra : NULL));
    if (copies) {
      CHECK(cuMemcpyDtoDAsync(z, y, N * sizeof(float), s));
      CHECK(cuMemsetD8Async(w, 0, 7 * N * sizeof(float), s));
    }
    CUresult end = cuStreamEndCapture(s, &g);
    printf("end_result=%d\n", (int)end);
    if (end != CUDA_SUCCESS)
      return 1;
  }
  CUgraphExec x, x2 = NULL;
  CHECK(cuGraphInstantiateWithFlags(&x, g, 0));
  if (!strcmp(op, "two-execs"))
    CHECK(cuGraphInstantiateWithFlags(&x2, g, 0));
  CHECK(cuGraphDestroy(g)); /* as torch does: the exec outlives its graph */
  SAY("launch", cuGraphLaunch(x, s));
  if (!strcmp(op, "free") || !strcmp(op, "by-hand") || !strcmp(op, "two-execs") || !strcmp(op, "extra")) {
    SAY("free", cuMemFree(y));
  } else if (copies) {
    SAY("free_w", cuMemFree(w));
    SAY("free", cuMemFree(y));
  } else if (!strcmp(op, "realloc-launch")) {
    SAY("free", cuMemFree(y));
    CUdeviceptr again;
    SAY("alloc", cuMemAlloc(&again, N * sizeof(float)));
    printf("same_address=%d\n", again == y);
    SAY("relaunch", cuGraphLaunch(x, s));
    SAY("relaunch2", cuGraphLaunch(x, s)); /* reported once per exec and allocation */
  } else if (async) {
    SAY("free_async", cuMemFreeAsync(y, other));
  } else if (!strcmp(op, "destroy-first")) {
    SAY("destroy", cuGraphExecDestroy(x));
    x = NULL;
    SAY("free", cuMemFree(y));
  } else if (!strcmp(op, "healthy")) {
    SAY("relaunch", cuGraphLaunch(x, s));
    SAY("free_unrelated", cuMemFree(unrelated));
    unrelated = 0;
    SAY("relaunch2", cuGraphLaunch(x, s));
    SAY("destroy", cuGraphExecDestroy(x));
    x = NULL;
    SAY("free", cuMemFree(y));
  } else if (vmm) {
    vmm_op(op, x, s, base, ha, hb, &prop);
  } else {
    fprintf(stderr, "stale_probe: unknown --op %s\n", op);
    return 2;
  }
  if (x)
    CHECK(cuGraphExecDestroy(x));
  if (x2)
    CHECK(cuGraphExecDestroy(x2));
  return 0;
}
