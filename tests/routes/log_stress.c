/* The driver's log callback under concurrent stress (test_escapes.py): the
 * fake driver calls capguard's callback on the offending thread with its own
 * lock held, as a real driver may. Threads race captures beginning and
 * ending (global mode, each on its own blocking stream) against refusals
 * that the driver logs: legacy-stream launches (906), allocations (900),
 * a call capguard does not wrap (the fake's cuFakeUnwatchedRefusal), ends of
 * invalidated captures (901), while others poll queries and record events.
 * A deadlock between capguard's locks and the driver's hangs it (the test's
 * timeout fails it). Prints refusals=N. */
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 6
#define ROUNDS 300

static CUcontext ctx;
static CUfunction fn;
static long refusals;
static CUresult (*unwatched)(void);

static void *worker(void *arg) {
  long id = (long)arg;
  CUstream s;
  CUevent e;
  if (cuCtxSetCurrent(ctx) || cuStreamCreate(&s, 0) || cuEventCreate(&e, 0))
    abort();
  for (int i = 0; i < ROUNDS; i++) {
    CUresult r;
    CUgraph g;
    CUdeviceptr p;
    if (cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS)
      continue; /* another thread's capture may refuse nothing here; keep going */
    cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
    cuEventRecord(e, s);
    switch ((id + i) % 4) {
    case 0: r = cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL); break;
    case 1: r = cuMemAlloc(&p, 64); if (r == CUDA_SUCCESS) cuMemFree(p); break;
    case 2: r = unwatched(); break;
    default: r = cuStreamQuery(s); break;
    }
    if (r != CUDA_SUCCESS)
      __atomic_add_fetch(&refusals, 1, __ATOMIC_RELAXED);
    if (cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g)
      cuGraphDestroy(g);
  }
  cuEventDestroy(e);
  cuStreamDestroy(s);
  return NULL;
}

int main(int argc, char **argv) {
  CUdevice dev;
  CUmodule m;
  unwatched = (CUresult(*)(void))dlsym(RTLD_DEFAULT, "cuFakeUnwatchedRefusal");
  if (argc < 2 || !unwatched || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuModuleLoad(&m, argv[1]) || cuModuleGetFunction(&fn, m, "fake_add_one")) {
    fprintf(stderr, "log_stress: set-up failed\n");
    return 2;
  }
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  printf("refusals=%ld\n", refusals);
  return 0;
}
