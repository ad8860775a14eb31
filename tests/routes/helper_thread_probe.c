/* A call that breaks a global capture from another thread, as NCCL's proxy
 * thread or a lazy communicator set-up makes one (test_helper_thread.py):
 * the main thread begins a global capture; a thread named "ncclProxy-7"
 * calls cuMemAlloc_v2 from inside a function named ncclCommInitRankConfig
 * (exported, so that the native stack names it); the main thread then ends
 * the capture. With "same", the main thread makes that call itself. Prints
 * alloc_result= and end_result=. */
#include <string.h>
#include <cuda.h>

#include <pthread.h>
#include <stdio.h>

#include "probe_check.h"

static CUresult alloc_result;

__attribute__((noinline, visibility("default"))) CUresult ncclCommInitRankConfig(void);
__attribute__((noinline, visibility("default"))) CUresult ncclCommInitRankConfig(void) {
  CUdeviceptr p;
  CUresult r = cuMemAlloc_v2(&p, 4096);
  __asm__ volatile("" ::: "memory"); /* not a tail call: its frame stays on the stack */
  return r;
}

static void *helper(void *ctx) {
  pthread_setname_np(pthread_self(), "ncclProxy-7");
  CHECK(cuCtxSetCurrent((CUcontext)ctx));
  alloc_result = ncclCommInitRankConfig();
  return NULL;
}

int main(int argc, char **argv) {
  CUstream s;
  CUgraph g;
  pthread_t t;
  CUcontext ctx = probe_primary_context();
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  if (argc > 1 && strcmp(argv[1], "same") == 0) {
    alloc_result = ncclCommInitRankConfig();
  } else {
    pthread_create(&t, NULL, helper, ctx);
    pthread_join(t, NULL);
  }
  CUresult end = cuStreamEndCapture(s, &g);
  printf("alloc_result=%d\nend_result=%d\n", (int)alloc_result, (int)end);
  return 0;
}
