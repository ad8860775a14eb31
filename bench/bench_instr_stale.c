/* The stale-pointer check's scenarios of bench_instr (bench/instr_budget.py
 * counts them with callgrind, with and without capguard, CAPGUARD_STALE=1):
 *   stale_free_K    K graph execs alive, each reading a buffer of its own;
 *                   counted: a cuMemAlloc and cuMemFree of memory none reads
 *   stale_map_K     the same execs; counted: a cuMemMap of a piece of a
 *                   reserved range none reads (a piece after the other)
 *   stale_unmap_K   the same, every piece mapped first; counted: a cuMemUnmap
 *   stale_launch_K  the same execs, the memory of all but the first freed
 *                   (K - 1 execs suspect); counted: a cuGraphLaunch of the first
 * The driver is reached through dlsym, as bench_instr's other scenarios. */
#include "bench_instr_stale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/file_read.h"
#include "driver_open.h"

#define GRANULE ((size_t)2 << 20)

static enum { NONE, FREE, MAP, UNMAP, LAUNCH } kind;
static long mapped;
static CUstream stream;
static CUgraphExec *execs;
static CUdeviceptr base;
static CUmemGenericAllocationHandle handle;

static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);
static CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*mem_unmap)(CUdeviceptr, size_t);
static CUresult (*graph_launch)(CUgraphExec, CUstream);

static void need(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "bench_instr: %s failed (CUresult %d)\n", what, (int)r);
    exit(2);
  }
}

/* K execs of one cg_test_fill node each, over a buffer of its own. */
static CUdeviceptr *make_execs(long k) {
  size_t len = 0;
  void *image = cg_read_file(CG_BENCH_CUBIN, 1 << 24, &len);
  if (!image) {
    fprintf(stderr, "bench_instr: cannot read %s\n", CG_BENCH_CUBIN);
    exit(2);
  }
  CUresult (*load)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUresult (*get)(CUfunction *, CUmodule, const char *) = tk_driver_get("cuModuleGetFunction");
  CUresult (*create)(CUgraph *, unsigned) = tk_driver_get("cuGraphCreate");
  CUresult (*add)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *) =
      tk_driver_get("cuGraphAddKernelNode_v2");
  CUresult (*inst)(CUgraphExec *, CUgraph, unsigned long long) = tk_driver_get("cuGraphInstantiateWithFlags");
  CUresult (*destroy)(CUgraph) = tk_driver_get("cuGraphDestroy");
  CUmodule m;
  CUfunction fill;
  need(load(&m, image), "cuModuleLoadData");
  need(get(&fill, m, "cg_test_fill"), "cuModuleGetFunction");
  CUdeviceptr *buf = calloc((size_t)k, sizeof *buf);
  execs = calloc((size_t)k, sizeof *execs);
  if (!buf || !execs)
    exit(2);
  float v = 1.0f;
  int n = 256;
  for (long i = 0; i < k; i++) {
    need(mem_alloc(&buf[i], 4096), "cuMemAlloc_v2");
    void *params[] = {&buf[i], &v, &n};
    /* built by hand, not captured: 4096 of them set up quickly under valgrind */
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = fill;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 256;
    kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = params;
    CUgraph g;
    CUgraphNode node;
    need(create(&g, 0), "cuGraphCreate");
    need(add(&node, g, NULL, 0, &kp), "cuGraphAddKernelNode_v2");
    need(inst(&execs[i], g, 0), "cuGraphInstantiateWithFlags");
    need(destroy(g), "cuGraphDestroy");
  }
  return buf;
}

int stale_setup(const char *what, CUstream s, long n) {
  static const struct {
    const char *prefix;
    int kind;
  } kinds[] = {{"stale_free_", FREE}, {"stale_map_", MAP}, {"stale_unmap_", UNMAP}, {"stale_launch_", LAUNCH}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strncmp(what, kinds[i].prefix, strlen(kinds[i].prefix)))
      kind = kinds[i].kind;
  long k = kind ? atol(strrchr(what, '_') + 1) : 0;
  if (!kind || k < 1 || k > 4096)
    return -1;
  stream = s;
  mem_alloc = tk_driver_get("cuMemAlloc_v2");
  mem_free = tk_driver_get("cuMemFree_v2");
  mem_map = tk_driver_get("cuMemMap");
  mem_unmap = tk_driver_get("cuMemUnmap");
  graph_launch = tk_driver_get("cuGraphLaunch");
  CUdeviceptr *buf = make_execs(k);
  if (kind == LAUNCH)
    for (long i = 1; i < k; i++) /* every other exec suspect until its next launch */
      need(mem_free(buf[i]), "cuMemFree_v2");
  if (kind == MAP || kind == UNMAP) { /* n + 1 granules: the warm-up's and the count's */
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) =
        tk_driver_get("cuMemAddressReserve");
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long) =
        tk_driver_get("cuMemCreate");
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    need(reserve(&base, (size_t)(n + 1) * GRANULE, 0, 0, 0), "cuMemAddressReserve");
    need(create(&handle, GRANULE, &prop, 0), "cuMemCreate");
    for (long i = 0; kind == UNMAP && i <= n; i++) /* one physical allocation mapped at every granule */
      need(mem_map(base + (CUdeviceptr)i * GRANULE, GRANULE, 0, handle, 0), "cuMemMap");
  }
  free(buf);
  /* The fake driver reads its settings (getenv) at every call: the same
   * environment with and without capguard (whose CAPGUARD_* and LD_PRELOAD
   * would lengthen each search), so that only capguard's work differs. */
  clearenv();
  /* Warm-up outside the count: the first of each call finds its wrapper's driver pointer. */
  return stale_measured(1) == CUDA_SUCCESS ? 0 : -1;
}

CUresult stale_measured(long n) {
  CUresult acc = CUDA_SUCCESS;
  CUdeviceptr p;
  for (long i = 0; i < n; i++) {
    if (kind == FREE) {
      acc |= mem_alloc(&p, 8192);
      acc |= mem_free(p);
    } else if (kind == MAP) {
      acc |= mem_map(base + (CUdeviceptr)mapped++ * GRANULE, GRANULE, 0, handle, 0);
    } else if (kind == UNMAP) {
      acc |= mem_unmap(base + (CUdeviceptr)mapped++ * GRANULE, GRANULE);
    } else {
      acc |= graph_launch(execs[0], stream);
    }
  }
  return acc;
}
