/* The loops whose instructions bench/instr_budget.py counts with callgrind
 * (--toggle-collect=instr_measured: only what runs inside that function and
 * its callees is counted, so the program's set-up and the first calls, which
 * find the driver and preload the priming file, are not). Run with N and 2N
 * iterations, with and without capguard preloaded: (Ir(2N) - Ir(N)) / N is
 * the cost of one iteration, the difference between the two runs what
 * capguard adds to it. Nothing here is timed.
 * Usage: bench_instr SCENARIO N [IMAGE]
 *   record, query, squery, launch, launchex, copy   one hot call (cuEventRecord,
 *        cuEventQuery, cuStreamQuery, cuLaunchKernel, cuLaunchKernelEx,
 *        cuMemcpyHtoDAsync_v2) with nothing capturing
 *   sync          cuStreamSynchronize (the hang watch keeps a blocking call
 *                 in its thread's slot)
 *   capture       a capture's begin and end (cuStreamBeginCapture_v2 +
 *                 cuStreamEndCapture), the graph destroyed outside the count
 *   capture_queried  the same, with another thread alive that queried an
 *                 event 5 times before the captures and then waits (the
 *                 queries' fence: its slot is parked by the warm-up's begins)
 *   load          cuModuleLoadData of IMAGE mid-capture, the load alone counted
 *   load_wide     the same, called through a library of 100,000 exported
 *                 symbols and a libcudart stand-in (as torch's loads are)
 * The driver is reached as torch's driver table reaches it (dlopen of
 * libcuda.so.1, dlsym), so a preloaded capguard answers with its wrappers.
 * Exit 2 with one line on stderr when the set-up fails. */
#include <cuda.h>

#include "capguard/file_read.h"
#include "capture_calls.h"
#include <dlfcn.h>
#include <pthread.h>
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
typedef CUresult (*sync_fn)(CUstream);

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
 * --toggle-collect names it). */
__attribute__((noinline, used)) CUresult instr_measured(const char *what, long n) {
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
  else if (!strcmp(what, "sync"))
    for (long i = 0; i < n; i++)
      acc |= ((sync_fn)fn)(st);
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

/* The thread of capture_queried: 5 queries, then blocked until the end. */
static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static int queried;
static void *querier(void *arg) {
  (void)arg;
  CUresult (*query)(CUevent) = tk_driver_get("cuEventQuery");
  for (int i = 0; i < 5; i++)
    sink = query(ev);
  __atomic_store_n(&queried, 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&hold);
  pthread_mutex_unlock(&hold);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_instr SCENARIO N [IMAGE]\n");
    return 2;
  }
  const char *what = argv[1];
  long n = atol(argv[2]);
  if (tk_driver_open_dlsym("bench_instr") != 0) {
    fprintf(stderr, "bench_instr: no CUDA driver (libcuda.so.1): %s\n", dlerror());
    return 2;
  }
  CUresult r = tk_driver_setup(&st);
  if (r != CUDA_SUCCESS)
    fail("driver set-up", r);

  if (!strcmp(what, "capture") || !strcmp(what, "capture_queried") || !strcmp(what, "load") ||
      !strcmp(what, "load_wide")) {
    int loads = strncmp(what, "capture", 7) != 0;
    capture_calls_resolve();
    pthread_t t;
    if (!strcmp(what, "capture_queried")) {
      CUresult (*event_create)(CUevent *, unsigned) = tk_driver_get("cuEventCreate");
      if ((r = event_create(&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
        fail("cuEventCreate", r);
      pthread_mutex_lock(&hold);
      if (pthread_create(&t, NULL, querier, NULL) != 0)
        fail("pthread_create", 0);
      while (!__atomic_load_n(&queried, __ATOMIC_ACQUIRE))
        sched_yield();
    }
    if (loads) {
      if (argc < 4) {
        fprintf(stderr, "bench_instr: %s needs an IMAGE\n", what);
        return 2;
      }
      size_t size;
      if (!(image = cg_read_file(argv[3], (size_t)1 << 30, &size)))
        return 2;
    }
    /* Warm-up outside the count: the first begin preloads, the first load
     * of an address is where any per-address work would be done once. */
    for (int i = 0; i < 2; i++)
      one_capture(loads ? what : NULL, 0);
    for (long i = 0; i < n; i++)
      one_capture(loads ? what : NULL, !loads);
    if (!strcmp(what, "capture_queried")) {
      pthread_mutex_unlock(&hold);
      pthread_join(t, NULL);
    }
    return 0;
  }

  static const struct {
    const char *what, *name;
  } hot[] = {{"record", "cuEventRecord"},   {"query", "cuEventQuery"},        {"squery", "cuStreamQuery"},
             {"launch", "cuLaunchKernel"}, {"launchex", "cuLaunchKernelEx"}, {"copy", "cuMemcpyHtoDAsync_v2"},
             {"sync", "cuStreamSynchronize"}};
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
  instr_measured(what, 10); /* warm-up: the wrapper finds the driver */
  sink = instr_measured(what, n);
  return 0;
}
