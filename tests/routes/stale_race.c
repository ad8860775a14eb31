/* The stale-pointer check under threads racing: RACERS threads each, ROUNDS
 * times, capture cg_test_fill over a buffer of its own, instantiate, launch,
 * free the buffer under the live exec (a finding), launch again and destroy
 * the exec; meanwhile one more thread maps and unmaps pieces of a reserved
 * range (expandable segments' way). capguard's tables are shared by all of
 * them: nothing may crash, hang or be lost (each free, and each launch after
 * it, named once). */
#include "stale_race.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "probe_check.h"

#define RACERS 4
#define ROUNDS 50
#define G ((size_t)2 << 20)

static CUcontext ctx;
/* Captures and instantiations one thread at a time: capguard walks no graph
 * while any capture is open (docs/stale.md), and every exec here must be
 * watched; the launches, frees, destroys, maps and unmaps race freely. */
static pthread_mutex_t capturing = PTHREAD_MUTEX_INITIALIZER;
static CUfunction fill;
static int failed;

static void *racer(void *arg) {
  (void)arg;
  if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return (void *)1;
  CUstream s;
  if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
    return (void *)1;
  float v = 1.0f;
  int n = 256;
  for (int r = 0; r < ROUNDS; r++) {
    CUdeviceptr y;
    CUgraph g;
    CUgraphExec x;
    void *params[] = {&y, &v, &n};
    pthread_mutex_lock(&capturing);
    int bad = cuMemAlloc(&y, 1024 + 64 * (size_t)r) != CUDA_SUCCESS ||
              cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS ||
              cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, s, params, NULL) != CUDA_SUCCESS ||
              cuStreamEndCapture(s, &g) != CUDA_SUCCESS || cuGraphInstantiateWithFlags(&x, g, 0) != CUDA_SUCCESS;
    pthread_mutex_unlock(&capturing);
    if (bad || cuGraphDestroy(g) != CUDA_SUCCESS || cuGraphLaunch(x, s) != CUDA_SUCCESS ||
        cuMemFree(y) != CUDA_SUCCESS || cuGraphLaunch(x, s) != CUDA_SUCCESS || cuGraphExecDestroy(x) != CUDA_SUCCESS)
      __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void *mapper(void *arg) {
  (void)arg;
  if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return (void *)1;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUdeviceptr base;
  CUmemGenericAllocationHandle h;
  if (cuMemAddressReserve(&base, 8 * G, 0, 0, 0) != CUDA_SUCCESS || cuMemCreate(&h, G, &prop, 0) != CUDA_SUCCESS)
    return (void *)1;
  for (int r = 0; r < ROUNDS * RACERS; r++)
    if (cuMemMap(base + (r % 8) * G, G, 0, h, 0) != CUDA_SUCCESS || cuMemUnmap(base + (r % 8) * G, G) != CUDA_SUCCESS)
      __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
  return NULL;
}

int stale_race(CUmodule mod) {
  CHECK(cuCtxGetCurrent(&ctx));
  CHECK(cuModuleGetFunction(&fill, mod, "cg_test_fill"));
  pthread_t t[RACERS + 1];
  for (int i = 0; i < RACERS; i++)
    if (pthread_create(&t[i], NULL, racer, NULL) != 0)
      return 2;
  if (pthread_create(&t[RACERS], NULL, mapper, NULL) != 0)
    return 2;
  for (int i = 0; i <= RACERS; i++) {
    void *rc;
    pthread_join(t[i], &rc);
    if (rc)
      failed = 1;
  }
  printf("failed=%d\nfrees=%d\n", failed, RACERS * ROUNDS);
  return failed ? 2 : 0;
}
