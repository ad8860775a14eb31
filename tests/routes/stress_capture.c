/* Stress: many threads capture at once, in
 * every capture mode and thread-interaction mode, and load and unload
 * modules inside and outside their captures, so that one thread's global
 * capture begins while another thread's unload (or capguard's deferred
 * unload) is on its way to the driver. Linked to libcuda directly (the
 * exported-symbol route).
 *
 * Usage: stress_capture IMAGE THREADS ITERATIONS
 * Prints totals as key=value lines; test_stress.py compares them with the
 * fake driver's trace and capguard's log. Every module the program loads is
 * unloaded by the end: unloads the driver refuses are retried after all
 * threads have finished, so a module still live at exit (FAKECUDA_STATS) is
 * one that capguard lost. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "capguard/file_read.h"

#define MAX_HELD 8

static const void *image;
static CUcontext ctx;
static int iterations;

typedef struct {
  int index;
  CUmodule held[MAX_HELD]; /* loaded, not yet unloaded */
  int n_held;
  /* what this thread saw */
  long loads, loads_failed, unload_calls, unloads_failed, ends, ends_broken, begins_failed;
} worker;

static uint64_t next_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void load(worker *w) {
  if (w->n_held == MAX_HELD)
    return;
  CUmodule m;
  w->loads++;
  if (cuModuleLoadData(&m, image) == CUDA_SUCCESS)
    w->held[w->n_held++] = m;
  else
    w->loads_failed++;
}

static void unload(worker *w) {
  if (w->n_held == 0)
    return;
  w->unload_calls++;
  if (cuModuleUnload(w->held[w->n_held - 1]) == CUDA_SUCCESS)
    w->n_held--;
  else
    w->unloads_failed++; /* kept: retried after the threads are done */
}

static void *run(void *arg) {
  worker *w = arg;
  static const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                              CU_STREAM_CAPTURE_MODE_RELAXED};
  /* Every pairing of capture mode and the thread's own interaction mode;
   * global dominates, as in real programs. */
  CUstreamCaptureMode capture_mode = modes[w->index % 4 == 3 ? 1 + w->index / 4 % 2 : 0];
  CUstreamCaptureMode thread_mode = modes[w->index % 3];
  CUstream s;
  if (cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
      cuThreadExchangeStreamCaptureMode(&thread_mode)) {
    fprintf(stderr, "stress: thread set-up failed\n");
    exit(2);
  }
  uint64_t rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1);
  for (int i = 0; i < iterations; i++) {
    uint64_t r = next_rand(&rnd);
    if (cuStreamBeginCapture(s, capture_mode) != CUDA_SUCCESS) {
      w->begins_failed++;
      continue;
    }
    if (r & 1)
      load(w);
    if (r & 2)
      unload(w);
    CUgraph g = NULL;
    w->ends++;
    if (cuStreamEndCapture(s, &g) != CUDA_SUCCESS)
      w->ends_broken++;
    if (g)
      cuGraphDestroy(g);
    /* Between captures: other threads' captures may still prohibit this one. */
    if ((r & 12) == 4)
      unload(w);
    if ((r & 48) == 16)
      load(w);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: stress_capture IMAGE THREADS ITERATIONS\n");
    return 2;
  }
  size_t size;
  image = cg_read_file(argv[1], (size_t)1 << 30, &size);
  int n = atoi(argv[2]);
  iterations = atoi(argv[3]);
  CUdevice dev;
  if (!image || n < 1 || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx)) {
    fprintf(stderr, "stress: set-up failed\n");
    return 2;
  }
  worker *w = calloc((size_t)n, sizeof *w);
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++) {
    w[i].index = i;
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  worker sum = {0};
  long cleanup_failed = 0, left = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(t[i], NULL);
  }
  for (int i = 0; i < n; i++) {
    sum.loads += w[i].loads;
    sum.loads_failed += w[i].loads_failed;
    sum.unload_calls += w[i].unload_calls;
    sum.unloads_failed += w[i].unloads_failed;
    sum.ends += w[i].ends;
    sum.ends_broken += w[i].ends_broken;
    sum.begins_failed += w[i].begins_failed;
    left += w[i].n_held;
    for (int k = 0; k < w[i].n_held; k++) /* nothing captures any more */
      if (cuModuleUnload(w[i].held[k]) != CUDA_SUCCESS)
        cleanup_failed++;
  }
  printf("loads=%ld\nloads_failed=%ld\nunload_calls=%ld\nunloads_failed=%ld\nends=%ld\nends_broken=%ld\n"
         "begins_failed=%ld\ncleanup_unloads=%ld\ncleanup_failed=%ld\n",
         sum.loads, sum.loads_failed, sum.unload_calls, sum.unloads_failed, sum.ends, sum.ends_broken,
         sum.begins_failed, left, cleanup_failed);
  free(w);
  free(t);
  free((void *)image);
  return 0;
}
