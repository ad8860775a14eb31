/* The hot path with nothing capturing: what capguard's wrappers of
 * cuEventRecord, cuEventQuery, cuStreamQuery, cuLaunchKernel and
 * cuLaunchKernelEx (an empty kernel from a PTX image, on a created stream;
 * the Ex form with a launch configuration and no attributes, as Triton's
 * launcher makes it) cost over the driver's own calls, measured in ONE
 * process, interleaved round by round:
 *   driver    dlopen("libcuda.so.1") + dlsym: the driver's own entry points
 *             (this program must NOT run with capguard preloaded: a preloaded
 *             shim interposes dlsym and would hand back its wrappers here too);
 *   capguard  dlopen(SHIM, RTLD_LOCAL | RTLD_NOW) + dlsym of the same names: the
 *             shim's exported wrappers, which find the real driver themselves.
 * Each round times ITERATIONS calls through the driver's pointer, the shim's,
 * and the driver's again (the three slots rotate through the three positions
 * round by round, so no slot always runs first); per call the medians over the
 * rounds are printed, the median of the rounds' differences (capguard -
 * driver), and the median of the differences of the driver's two slots (A/A:
 * what a difference of nothing measures for that very call on this machine;
 * on the real driver it grows with the call's own cost):
 *   call ns_driver ns_capguard diff_ns aa_ns ratio
 * Usage: bench_hot_calls SHIM [ITERATIONS [ROUNDS]]
 * Exit 2 (one line on stderr) when there is no driver, the set-up fails, or
 * the shim exports no wrapper for one of the calls. */
#include <cuda.h>

#include "capguard/clock.h"
#include "driver_open.h"
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ROUNDS = 1001, NCALLS = 5 };

static const char *const names[NCALLS] = {"cuEventRecord", "cuEventQuery", "cuStreamQuery", "cuLaunchKernel",
                                          "cuLaunchKernelEx"};
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
static CUlaunchConfig ex_config;

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
/* The kernel launched: does nothing (any driver JIT-compiles PTX for its GPU). */
static const char nop_ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry cg_bench_nop()\n{\n\tret;\n}\n";
static CUfunction nop;

typedef CUresult (*record_fn)(CUevent, CUstream);
typedef CUresult (*query_event_fn)(CUevent);
typedef CUresult (*query_stream_fn)(CUstream);

static CUevent ev;
static CUstream st;
static volatile CUresult sink;

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* ns per call of `iters` calls of entry point `which` through pointer p. */
static double time_calls(int which, void *p, long iters) {
  CUresult acc = CUDA_SUCCESS;
  uint64_t t0 = cg_monotonic_ns();
  switch (which) {
  case 0: {
    record_fn f = (record_fn)p;
    for (long i = 0; i < iters; i++)
      acc |= f(ev, st);
    break;
  }
  case 1: {
    query_event_fn f = (query_event_fn)p;
    for (long i = 0; i < iters; i++)
      acc |= f(ev);
    break;
  }
  case 2: {
    query_stream_fn f = (query_stream_fn)p;
    for (long i = 0; i < iters; i++)
      acc |= f(st);
    break;
  }
  case 3: {
    launch_fn f = (launch_fn)p;
    for (long i = 0; i < iters; i++)
      acc |= f(nop, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL);
    break;
  }
  default: {
    launch_ex_fn f = (launch_ex_fn)p;
    for (long i = 0; i < iters; i++)
      acc |= f(&ex_config, nop, NULL, NULL);
    break;
  }
  }
  uint64_t t1 = cg_monotonic_ns();
  sink = acc;
  return (double)(t1 - t0) / (double)iters;
}

static const char *file_of(void *p) {
  Dl_info i;
  return dladdr(p, &i) && i.dli_fname ? i.dli_fname : "?";
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_hot_calls SHIM [ITERATIONS [ROUNDS]]\n");
    return 2;
  }
  const char *shim_path = argv[1];
  long iters = argc > 2 ? atol(argv[2]) : 200000;
  int rounds = argc > 3 ? atoi(argv[3]) : 21;
  if (iters < 1)
    iters = 1;
  if (rounds < 1)
    rounds = 1;
  if (rounds > MAX_ROUNDS)
    rounds = MAX_ROUNDS;
  const char *pre = getenv("LD_PRELOAD");
  if (pre && strstr(pre, "capguard")) {
    fprintf(stderr, "bench_hot_calls: run without LD_PRELOAD=%s (a preloaded shim answers dlsym for the driver too)\n",
            pre);
    return 2;
  }

  if (tk_driver_open_dlsym("bench_hot_calls") != 0) {
    fprintf(stderr, "bench_hot_calls: no CUDA driver (libcuda.so.1): %s\n", dlerror());
    return 2;
  }
  void *drv[NCALLS], *cg[NCALLS];
  for (int c = 0; c < NCALLS; c++)
    drv[c] = tk_driver_get(names[c]); /* exit 2 with a line when missing */
  CUresult r = tk_driver_setup(&st);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "bench_hot_calls: driver set-up failed (CUresult %d)\n", (int)r);
    return 2;
  }
  CUresult (*event_create)(CUevent *, unsigned) = tk_driver_get("cuEventCreate");
  if ((r = event_create(&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
    fprintf(stderr, "bench_hot_calls: cuEventCreate failed (CUresult %d)\n", (int)r);
    return 2;
  }

  CUresult (*load_data)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUresult (*get_function)(CUfunction *, CUmodule, const char *) = tk_driver_get("cuModuleGetFunction");
  CUmodule nop_module;
  if ((r = load_data(&nop_module, nop_ptx)) != CUDA_SUCCESS ||
      (r = get_function(&nop, nop_module, "cg_bench_nop")) != CUDA_SUCCESS) {
    fprintf(stderr, "bench_hot_calls: loading the empty kernel failed (CUresult %d)\n", (int)r);
    return 2;
  }

  ex_config.gridDimX = ex_config.gridDimY = ex_config.gridDimZ = 1;
  ex_config.blockDimX = ex_config.blockDimY = ex_config.blockDimZ = 1;
  ex_config.hStream = st;

  void *shim = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
  if (!shim) {
    fprintf(stderr, "bench_hot_calls: cannot dlopen the shim: %s\n", dlerror());
    return 2;
  }
  struct link_map *lm = NULL;
  if (dlinfo(shim, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
    fprintf(stderr, "bench_hot_calls: dlinfo on the shim failed: %s\n", dlerror());
    return 2;
  }
  for (int c = 0; c < NCALLS; c++) {
    cg[c] = dlsym(shim, names[c]);
    /* dlsym on the shim's handle also searches its dependencies: a pointer
     * outside the shim itself is not a wrapper. */
    Dl_info in;
    if (!cg[c] || !dladdr(cg[c], &in) || !in.dli_fname || strcmp(in.dli_fname, lm->l_name) != 0) {
      fprintf(stderr, "bench_hot_calls: %s exports no %s wrapper (%s); this capguard does not wrap it\n", shim_path,
              names[c], cg[c] ? file_of(cg[c]) : "dlsym: not found");
      return 2;
    }
  }

  /* The event recorded once, so that the queries ask about finished work. */
  if ((r = ((record_fn)drv[0])(ev, st)) != CUDA_SUCCESS) {
    fprintf(stderr, "bench_hot_calls: cuEventRecord failed (CUresult %d)\n", (int)r);
    return 2;
  }
  CUresult (*stream_sync)(CUstream) = tk_driver_get("cuStreamSynchronize");
  stream_sync(st);
  for (int c = 0; c < NCALLS; c++) { /* warm-up (the shim finds the driver on its first call) */
    time_calls(c, drv[c], iters / 10 + 1);
    time_calls(c, cg[c], iters / 10 + 1);
  }

  printf("# %ld calls per round, %d rounds, interleaved; driver %s, capguard %s\n", iters, rounds, file_of(drv[0]),
         file_of(cg[0]));
  printf("%-16s %10s %12s %9s %7s %7s\n", "call", "ns_driver", "ns_capguard", "diff_ns", "aa_ns", "ratio");
  for (int c = 0; c < NCALLS; c++) {
    static double d[MAX_ROUNDS], w[MAX_ROUNDS], diff[MAX_ROUNDS], aa[MAX_ROUNDS];
    for (int k = 0; k < rounds; k++) {
      double t[3];
      for (int pos = 0; pos < 3; pos++) {
        int slot = (pos + k) % 3; /* 0: driver, 1: capguard, 2: driver again */
        t[slot] = time_calls(c, slot == 1 ? cg[c] : drv[c], iters);
      }
      d[k] = t[0];
      w[k] = t[1];
      diff[k] = t[1] - t[0];
      aa[k] = t[2] - t[0];
      stream_sync(st);
    }
    double md = median(d, rounds), mw = median(w, rounds), mdiff = median(diff, rounds), maa = median(aa, rounds);
    printf("%-16s %10.2f %12.2f %9.2f %7.2f %7.3f\n", names[c], md, mw, mdiff, maa, md > 0 ? mw / md : 0.0);
  }
  if (sink == (CUresult)-1)
    printf("#\n");
  return 0;
}
