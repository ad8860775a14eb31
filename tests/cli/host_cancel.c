/* A host that cancels threads inside capguard, over the fake driver (found
 * as libcuda.so.1 through LD_LIBRARY_PATH):
 *   host_cancel ROUNDS THREADS
 *       each round starts THREADS threads that capture (thread-local mode,
 *       a stream each) and load a new PTX image in each capture (guard mode
 *       records each one in the priming file: open, flock, pwrite, all
 *       cancellation points), cancels them after 1 to 8 ms (deferred
 *       cancellation, the default) and joins them; then the main thread
 *       captures with a load of its own. Says "host: N rounds" and exits 0;
 *       a lock a cancelled thread left held makes it hang instead.
 * Exit: 0, 1 when a driver call failed (said on stdout), 2 usage. */
#include <cuda.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver_open.h"

static CUresult (*begin)(CUstream, CUstreamCaptureMode);
static CUresult (*end)(CUstream, CUgraph *);
static CUresult (*load)(CUmodule *, const void *);
static CUresult (*graph_destroy)(CUgraph);
static CUresult (*stream_create)(CUstream *, unsigned);
static CUresult (*ctx_set)(CUcontext);
static CUcontext ctx;
static unsigned images; /* a new image for every load: each one is recorded */

/* One capture on s that loads a new image (kept loaded: an unload in the
 * capture would be deferred, which is another path). Only a failed begin is
 * an error: a driver before 12.3 refuses the load and so the end. */
static CUresult capture_with_load(CUstream s, const char *who) {
  char ptx[256];
  unsigned k = __atomic_add_fetch(&images, 1, __ATOMIC_RELAXED);
  snprintf(ptx, sizeof ptx, ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k_%s_%u()\n{\n\tret;\n}\n",
           who, k);
  CUmodule m;
  CUgraph g = NULL;
  CUresult r = begin(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r)
    return r;
  (void)load(&m, ptx);
  (void)end(s, &g);
  if (g)
    graph_destroy(g);
  return CUDA_SUCCESS;
}

static void *worker(void *arg) {
  (void)arg;
  ctx_set(ctx);
  CUstream s;
  if (stream_create(&s, CU_STREAM_NON_BLOCKING))
    return NULL;
  for (;;) {
    capture_with_load(s, "w");
    pthread_testcancel();
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3)
    goto usage;
  int rounds = atoi(argv[1]), threads = atoi(argv[2]);
  if (rounds < 1 || threads < 1 || threads > 64)
    goto usage;
  if (tk_driver_open("host_cancel") != 0)
    return 1;
  begin = tk_driver_get("cuStreamBeginCapture");
  end = tk_driver_get("cuStreamEndCapture");
  load = tk_driver_get("cuModuleLoadData");
  graph_destroy = tk_driver_get("cuGraphDestroy");
  stream_create = tk_driver_get("cuStreamCreate");
  ctx_set = tk_driver_get("cuCtxSetCurrent");
  CUresult (*ctx_get)(CUcontext *) = tk_driver_get("cuCtxGetCurrent");
  CUstream s;
  CUresult r = tk_driver_setup(&s);
  if (r || (r = ctx_get(&ctx))) {
    printf("host_cancel: driver set-up failed (CUresult %d)\n", (int)r);
    return 1;
  }
  srand((unsigned)time(NULL) ^ (unsigned)clock());
  for (int round = 0; round < rounds; round++) {
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
      pthread_create(&t[i], NULL, worker, NULL);
    struct timespec nap = {0, (1 + rand() % 8) * 1000000L};
    nanosleep(&nap, NULL);
    for (int i = 0; i < threads; i++)
      pthread_cancel(t[i]);
    for (int i = 0; i < threads; i++)
      pthread_join(t[i], NULL);
    if ((r = capture_with_load(s, "main"))) {
      printf("host_cancel: the main thread's capture failed to begin (CUresult %d)\n", (int)r);
      return 1;
    }
  }
  printf("host: %d rounds\n", rounds);
  return 0;
usage:
  fprintf(stderr, "usage: host_cancel ROUNDS THREADS\n");
  return 2;
}
