/* Many threads capturing at once: what a begin+end costs each when THREADS
 * threads capture on streams of their own at the same time (a serving
 * engine warming up per-GPU workers, or a test harness), against one
 * thread alone. Each thread makes ITERATIONS captures (begin, end, graph
 * destroy) in MODE (0 global, 1 thread-local, 2 relaxed) after a common
 * start; the wall time from the start to the last thread's end, per capture,
 * the process's voluntary context switches per capture (lock hand-offs
 * put threads to sleep) and its CPU time (user and system) per capture,
 * which a loaded machine's other work does not stretch as it does the wall
 * time, are printed:
 *   ns_per_capture N csw_per_capture C cpu_ns_per_capture U
 * bench/run_bench_threads.sh runs it with and without capguard, alternating.
 * Usage: bench_threads THREADS ITERATIONS [MODE]; exit 2 with one line when
 * the set-up fails. */
#include <cuda.h>

#include "capguard/clock.h"
#include "driver_open.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static int iterations, mode;
static CUcontext ctx;
static pthread_barrier_t start, stop;
static CUresult (*set_current)(CUcontext);
static CUresult (*stream_create)(CUstream *, unsigned);
static CUresult (*begin)(CUstream, CUstreamCaptureMode);
static CUresult (*end)(CUstream, CUgraph *);
static CUresult (*graph_destroy)(CUgraph);
/* The first thread's start and the last one's end: measured by the threads,
 * since the main thread may be scheduled late. */
static uint64_t first_start = UINT64_MAX, last_end;

static void *captures(void *unused) {
  (void)unused;
  CUstream s;
  if (set_current(ctx) != CUDA_SUCCESS || stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    fprintf(stderr, "bench_threads: a thread's stream could not be made\n");
    exit(2);
  }
  pthread_barrier_wait(&start);
  uint64_t t0 = cg_monotonic_ns();
  for (uint64_t seen = __atomic_load_n(&first_start, __ATOMIC_RELAXED);
       t0 < seen && !__atomic_compare_exchange_n(&first_start, &seen, t0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);)
    ;
  for (int i = 0; i < iterations; i++) {
    CUgraph g = NULL;
    if (begin(s, (CUstreamCaptureMode)mode) != CUDA_SUCCESS) {
      fprintf(stderr, "bench_threads: a begin failed\n");
      exit(2);
    }
    end(s, &g);
    if (g)
      graph_destroy(g);
  }
  uint64_t t1 = cg_monotonic_ns();
  for (uint64_t seen = __atomic_load_n(&last_end, __ATOMIC_RELAXED);
       t1 > seen && !__atomic_compare_exchange_n(&last_end, &seen, t1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);)
    ;
  pthread_barrier_wait(&stop);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_threads THREADS ITERATIONS [MODE]\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  iterations = atoi(argv[2]);
  mode = argc > 3 ? atoi(argv[3]) : 0;
  if (threads < 1 || iterations < 1 || mode < 0 || mode > 2) {
    fprintf(stderr, "bench_threads: THREADS and ITERATIONS must be positive, MODE 0, 1 or 2\n");
    return 2;
  }
  if (tk_driver_open_dlsym("bench_threads") != 0) {
    fprintf(stderr, "bench_threads: no CUDA driver (libcuda.so.1)\n");
    return 2;
  }
  set_current = tk_driver_get("cuCtxSetCurrent");
  stream_create = tk_driver_get("cuStreamCreate");
  begin = tk_driver_get("cuStreamBeginCapture_v2");
  end = tk_driver_get("cuStreamEndCapture");
  graph_destroy = tk_driver_get("cuGraphDestroy");
  CUresult (*get_current)(CUcontext *) = tk_driver_get("cuCtxGetCurrent");
  if (tk_driver_setup(NULL) != CUDA_SUCCESS || get_current(&ctx) != CUDA_SUCCESS) {
    fprintf(stderr, "bench_threads: driver set-up failed\n");
    return 2;
  }
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&stop, NULL, (unsigned)threads + 1);
  pthread_t *t = malloc(sizeof *t * (size_t)threads);
  if (!t)
    return 2;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, captures, NULL) != 0) {
      fprintf(stderr, "bench_threads: cannot start thread %d\n", i);
      return 2;
    }
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  pthread_barrier_wait(&start);
  pthread_barrier_wait(&stop);
  getrusage(RUSAGE_SELF, &r1);
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  free(t);
  double n = (double)threads * iterations;
  double cpu_ns = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e9 +
                  (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e3;
  printf("ns_per_capture %.0f csw_per_capture %.3f cpu_ns_per_capture %.0f\n", (double)(last_end - first_start) / n,
         (double)(r1.ru_nvcsw - r0.ru_nvcsw) / n, cpu_ns / n);
  return 0;
}
