/* The loops whose instructions bench/instr_budget.py counts with callgrind
 * (--toggle-collect=instr_measured: only what runs inside that function and
 * its callees is counted, so the program's set-up and the first calls, which
 * find the driver and preload the priming file, are not). Run with N and 2N
 * iterations, with and without capguard preloaded: (Ir(2N) - Ir(N)) / N is
 * the cost of one iteration, the difference between the two runs what
 * capguard adds to it. Nothing here is timed.
 * Usage: bench_instr SCENARIO N [SIZE [IMAGE]]
 * SIZE: for a load, the copies of IMAGE loaded and kept first (a served
 * load then finds that many taken before it); for a capture or a hot call,
 * the other threads alive that queried an event and wait (their slots)
 *   record, query, squery, launch, launchex, copy, glaunch, ssync, esync,
 *   csync, free   one hot call (cuEventRecord, cuEventQuery, cuStreamQuery,
 *        cuLaunchKernel, cuLaunchKernelEx, cuMemcpyHtoDAsync_v2,
 *        cuGraphLaunch, cuStreamSynchronize, cuEventSynchronize,
 *        cuCtxSynchronize, cuMemFree_v2) with nothing capturing
 *   capture       a capture's begin and end (cuStreamBeginCapture_v2 +
 *                 cuStreamEndCapture), the graph destroyed outside the count
 *   capture_queried  the same, with SIZE other threads (1 by default) alive
 *                 that queried an event 5 times before the captures and then
 *                 wait (the queries' fence: their slots are parked by the
 *                 warm-up's begins)
 *   load          cuModuleLoadData of IMAGE mid-capture, the load alone counted
 *   load_wide     the same, called through a library of 100,000 exported
 *                 symbols and a libcudart stand-in (as torch's loads are)
 *   stale_free_K, stale_map_K, stale_unmap_K, stale_launch_K   the
 *                 stale-pointer check's frees, maps, unmaps and launches with
 *                 K graph execs alive
 *                 (bench_instr_stale.c)
 * The driver is reached as torch's driver table reaches it (dlopen of
 * libcuda.so.1, dlsym), so a preloaded capguard answers with its wrappers.
 * Exit 2 with one line on stderr when the set-up fails. */
#include <cuda.h>

#include "bench_instr_stale.h"
#include "capguard/file_read.h"
#include "capture_calls.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From bench/capture/wide.c (gen_wide.py): calls fn(stream, mode) through
 * the libcudart stand-in, from inside the 100,000-symbol library. */
int cg_bench_begin(void *fn, void *stream, int mode);

static const char nop_ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry cg_bench_nop()\n{\n\tret;\n}\n";

typedef CUresult (*record_fn)(CUevent, CUstream);
typedef CUresult (*query_event_fn)(CUevent);
typedef CUresult (*query_stream_fn)(CUstream);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*copy_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*graph_launch_fn)(CUgraphExec, CUstream);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*ctx_sync_fn)(void);

static CUstream st;
static CUevent ev;
static CUfunction nop;
static CUlaunchConfig ex_config;
static CUdeviceptr dst;
static char src[64];
static void *fn;
static const void *image;
static CUmodule loaded;
static volatile CUresult sink;

static void fail(const char *what, CUresult r) {
  fprintf(stderr, "bench_instr: %s failed (CUresult %d)\n", what, (int)r);
  exit(2);
}

/* The load as the wide library makes it (cg_bench_begin's fn(stream, mode)). */
static __attribute__((noinline)) int load_from_wide(void *module, int unused) {
  (void)unused;
  int r = (int)p_cuModuleLoadData((CUmodule *)module, image);
  __asm__ volatile("" ::: "memory");
  return r;
}

/* Everything counted happens inside this function (callgrind's
 * --toggle-collect names it). Never cloned, on any build type: gcc -O3
 * (--buildtype=release) made instr_measured.constprop.0 of it for the
 * calls whose scenario is a constant, and callgrind, toggled by the name,
 * then counted nothing; noipa keeps gcc from cloning or specializing it
 * (clang does neither to a function it exports). instr_budget.py also
 * refuses a count of 0. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define CG_BENCH_MEASURED __attribute__((noipa, used))
#endif
#endif
#ifndef CG_BENCH_MEASURED
#define CG_BENCH_MEASURED __attribute__((noinline, used))
#endif
CG_BENCH_MEASURED CUresult instr_measured(const char *what, long n) {
  CUresult acc = CUDA_SUCCESS;
  if (!strcmp(what, "record"))
    for (long i = 0; i < n; i++)
      acc |= ((record_fn)fn)(ev, st);
  else if (!strcmp(what, "query"))
    for (long i = 0; i < n; i++)
      acc |= ((query_event_fn)fn)(ev);
  else if (!strcmp(what, "squery"))
    for (long i = 0; i < n; i++)
      acc |= ((query_stream_fn)fn)(st);
  else if (!strcmp(what, "launch"))
    for (long i = 0; i < n; i++)
      acc |= ((launch_fn)fn)(nop, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL);
  else if (!strcmp(what, "launchex"))
    for (long i = 0; i < n; i++)
      acc |= ((launch_ex_fn)fn)(&ex_config, nop, NULL, NULL);
  else if (!strcmp(what, "copy"))
    for (long i = 0; i < n; i++)
      acc |= ((copy_fn)fn)(dst, src, sizeof src, st);
  else if (!strcmp(what, "glaunch"))
    for (long i = 0; i < n; i++)
      acc |= ((graph_launch_fn)fn)((CUgraphExec)(uintptr_t)0x7000, st);
  else if (!strcmp(what, "ssync"))
    for (long i = 0; i < n; i++)
      acc |= ((query_stream_fn)fn)(st);
  else if (!strcmp(what, "esync"))
    for (long i = 0; i < n; i++)
      acc |= ((query_event_fn)fn)(ev);
  else if (!strcmp(what, "csync"))
    for (long i = 0; i < n; i++)
      acc |= ((ctx_sync_fn)fn)();
  else if (!strcmp(what, "free"))
    for (long i = 0; i < n; i++)
      acc |= ((free_fn)fn)(dst);
  else if (!strcmp(what, "begin"))
    acc = p_cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL);
  else if (!strcmp(what, "end")) {
    CUgraph g = NULL;
    acc = p_cuStreamEndCapture(st, &g);
    if (g)
      p_cuGraphDestroy(g);
  } else if (!strcmp(what, "load"))
    acc = p_cuModuleLoadData(&loaded, image);
  else if (!strcmp(what, "load_wide"))
    acc = (CUresult)cg_bench_begin((void *)load_from_wide, &loaded, 0);
  else if (!strncmp(what, "stale_", 6))
    acc = stale_measured(n);
  return acc;
}

/* One capture, with a load inside it when load is not NULL ("load" or
 * "load_wide"); counted: begin and end when count_capture, else the load. */
static void one_capture(const char *load, int count_capture) {
  CUgraph g = NULL;
  if (count_capture)
    instr_measured("begin", 1);
  else if (p_cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS)
    fail("cuStreamBeginCapture_v2", 1);
  loaded = NULL;
  if (load)
    sink = instr_measured(load, 1);
  if (count_capture)
    instr_measured("end", 1);
  else {
    p_cuStreamEndCapture(st, &g);
    if (g)
      p_cuGraphDestroy(g);
  }
  if (loaded)
    p_cuModuleUnload(loaded);
}

/* The threads of capture_queried (and of a hot call with THREADS): 5
 * queries each, then blocked until the end. */
static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static int queried;
static void *querier(void *arg) {
  (void)arg;
  CUresult (*query)(CUevent) = tk_driver_get("cuEventQuery");
  for (int i = 0; i < 5; i++)
    sink = query(ev);
  __atomic_add_fetch(&queried, 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&hold);
  pthread_mutex_unlock(&hold);
  return NULL;
}

static pthread_t queriers[256];
static long n_queriers;
static void queriers_start(long n) {
  n_queriers = n < 256 ? n : 256;
  pthread_mutex_lock(&hold);
  for (long i = 0; i < n_queriers; i++)
    if (pthread_create(&queriers[i], NULL, querier, NULL) != 0)
      fail("pthread_create", 0);
  while (__atomic_load_n(&queried, __ATOMIC_ACQUIRE) < n_queriers)
    sched_yield();
}
static void queriers_stop(void) {
  pthread_mutex_unlock(&hold);
  for (long i = 0; i < n_queriers; i++)
    pthread_join(queriers[i], NULL);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_instr SCENARIO N [SIZE [IMAGE]]\n");
    return 2;
  }
  const char *what = argv[1];
  long n = atol(argv[2]);
  long size = argc > 3 ? atol(argv[3]) : 0;
  if (tk_driver_open_dlsym("bench_instr") != 0) {
    fprintf(stderr, "bench_instr: no CUDA driver (libcuda.so.1): %s\n", dlerror());
    return 2;
  }
  CUresult r = tk_driver_setup(&st);
  if (r != CUDA_SUCCESS)
    fail("driver set-up", r);
  if (!strncmp(what, "stale_", 6)) { /* bench_instr_stale.c */
    if (stale_setup(what, st, n) != 0)
      fail(what, 0);
    sink = instr_measured(what, n);
    return 0;
  }

  if (!strcmp(what, "capture") || !strcmp(what, "capture_queried") || !strcmp(what, "load") ||
      !strcmp(what, "load_wide")) {
    int loads = strncmp(what, "capture", 7) != 0;
    capture_calls_resolve();
    if (!strcmp(what, "capture_queried")) {
      CUresult (*event_create)(CUevent *, unsigned) = tk_driver_get("cuEventCreate");
      if ((r = event_create(&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
        fail("cuEventCreate", r);
      queriers_start(size > 0 ? size : 1);
    }
    if (loads) {
      if (argc < 5) {
        fprintf(stderr, "bench_instr: %s needs an IMAGE\n", what);
        return 2;
      }
      size_t image_size;
      if (!(image = cg_read_file(argv[4], (size_t)1 << 30, &image_size)))
        return 2;
    }
    /* The copies held (a load with SIZE): taken in one capture, as an engine
     * that loads many modules of one image while capturing, and kept. */
    if (loads && size > 0) {
      if ((r = p_cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL)) != CUDA_SUCCESS)
        fail("cuStreamBeginCapture_v2", r);
      for (long i = 0; i < size; i++) {
        CUmodule kept; /* the driver alone may refuse it mid-capture: kept or not, as a served one */
        sink = p_cuModuleLoadData(&kept, image);
      }
      CUgraph g = NULL;
      p_cuStreamEndCapture(st, &g);
      if (g)
        p_cuGraphDestroy(g);
    }
    /* Warm-up outside the count: the first begin preloads, the first load
     * of an address is where any per-address work would be done once. A
     * capture's warm-up also fills what the first captures of a process
     * fill once (the hang watch's ring of the newest 64 graphs, which then
     * gives back a site for each one it takes): the count is the steady
     * state's. */
    for (int i = 0; i < (loads ? 2 : 80); i++)
      one_capture(loads ? what : NULL, 0);
    for (long i = 0; i < n; i++)
      one_capture(loads ? what : NULL, !loads);
    if (n_queriers)
      queriers_stop();
    return 0;
  }

  static const struct {
    const char *what, *name;
  } hot[] = {{"record", "cuEventRecord"},   {"query", "cuEventQuery"},        {"squery", "cuStreamQuery"},
             {"launch", "cuLaunchKernel"}, {"launchex", "cuLaunchKernelEx"}, {"copy", "cuMemcpyHtoDAsync_v2"},
             {"glaunch", "cuGraphLaunch"}, {"ssync", "cuStreamSynchronize"}, {"esync", "cuEventSynchronize"},
             {"csync", "cuCtxSynchronize"}, {"free", "cuMemFree_v2"}};
  for (size_t i = 0; i < sizeof hot / sizeof hot[0]; i++)
    if (!strcmp(what, hot[i].what))
      fn = tk_driver_get(hot[i].name);
  if (!fn) {
    fprintf(stderr, "bench_instr: unknown scenario '%s'\n", what);
    return 2;
  }
  CUresult (*event_create)(CUevent *, unsigned) = tk_driver_get("cuEventCreate");
  if ((r = event_create(&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
    fail("cuEventCreate", r);
  CUmodule m;
  CUresult (*load_data)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUresult (*get_function)(CUfunction *, CUmodule, const char *) = tk_driver_get("cuModuleGetFunction");
  if ((r = load_data(&m, nop_ptx)) != CUDA_SUCCESS || (r = get_function(&nop, m, "cg_bench_nop")))
    fail("loading the empty kernel", r);
  CUresult (*mem_alloc)(CUdeviceptr *, size_t) = tk_driver_get("cuMemAlloc_v2");
  if ((r = mem_alloc(&dst, sizeof src)) != CUDA_SUCCESS)
    fail("cuMemAlloc_v2", r);
  ex_config.gridDimX = ex_config.gridDimY = ex_config.gridDimZ = 1;
  ex_config.blockDimX = ex_config.blockDimY = ex_config.blockDimZ = 1;
  ex_config.hStream = st;
  if ((r = ((record_fn)tk_driver_get("cuEventRecord"))(ev, st)) != CUDA_SUCCESS)
    fail("cuEventRecord", r);
  if (size > 0)
    queriers_start(size);
  instr_measured(what, 10); /* warm-up: the wrapper finds the driver */
  sink = instr_measured(what, n);
  if (n_queriers)
    queriers_stop();
  return 0;
}
