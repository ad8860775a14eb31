/* Forked children under capguard, over the fake driver (linked directly).
 *
 *   fork_probe quiet N K     N captures, each broken by an allocation inside
 *                            it; then K children that do nothing with CUDA
 *                            and exit() (their exit runs capguard's destructor)
 *   fork_probe capture K     one capture; then K children that each make one
 *                            capture broken by an allocation, and exit()
 *   fork_probe hammer T F    T threads capture in a loop, each capture
 *                            forking a second stream it never joins (the end
 *                            is 904: capguard's fork table and its interned
 *                            names), while the main thread forks F children
 *                            that each capture the same way and _exit(0).
 *                            A child not done in 10 s hangs: it is killed and
 *                            counted. Prints children= and hangs=. */
#include <cuda.h>

#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x)                                                                  \
  do {                                                                            \
    CUresult r_ = (x);                                                            \
    if (r_ != CUDA_SUCCESS) {                                                     \
      fprintf(stderr, "fork_probe: %s: %d (line %d)\n", #x, (int)r_, __LINE__); \
      exit(3);                                                                    \
    }                                                                             \
  } while (0)

static CUcontext ctx;

static void set_up(void) {
  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
}

/* A capture broken by an allocation made inside it (900, then 901 at the end). */
static void broken_capture(CUstream s) {
  CUdeviceptr p;
  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  (void)cuMemAlloc(&p, 64);
  CUgraph g = NULL;
  (void)cuStreamEndCapture(s, &g);
  if (g)
    cuGraphDestroy(g);
}

/* A capture that forks side off and never joins it: the end answers 904. */
static CUresult unjoined_capture(CUstream main, CUstream side, CUevent ev, CUdeviceptr mem) {
  CHECK(cuStreamBeginCapture(main, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CHECK(cuEventRecord(ev, main));
  CHECK(cuStreamWaitEvent(side, ev, 0));
  CHECK(cuMemsetD8Async(mem, 1, 16, side));
  CUgraph g = NULL;
  CUresult r = cuStreamEndCapture(main, &g);
  if (g)
    cuGraphDestroy(g);
  return r;
}

typedef struct {
  CUstream main, side;
  CUevent ev;
  CUdeviceptr mem;
} unjoined_kit;

static void kit_make(unjoined_kit *k) {
  CHECK(cuStreamCreate(&k->main, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&k->side, CU_STREAM_NON_BLOCKING));
  CHECK(cuEventCreate(&k->ev, CU_EVENT_DISABLE_TIMING));
  CHECK(cuMemAlloc(&k->mem, 64));
}

static volatile int stop;

static void *capturer(void *arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(ctx));
  unjoined_kit k;
  kit_make(&k);
  while (!stop)
    if (unjoined_capture(k.main, k.side, k.ev, k.mem) != CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
      fprintf(stderr, "fork_probe: a parent capture did not end with 904\n");
  return NULL;
}

static int wait_child(pid_t pid) {
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid)
      return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 2;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec >= 10) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return 1;
    }
    struct timespec nap = {0, 200000};
    nanosleep(&nap, NULL);
  }
}

static int hammer(int threads, int children) {
  set_up();
  pthread_t t[64];
  for (int i = 0; i < threads && i < 64; i++)
    pthread_create(&t[i], NULL, capturer, NULL);
  int hangs = 0, failed = 0;
  for (int i = 0; i < children; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      unjoined_kit k;
      kit_make(&k);
      _exit(unjoined_capture(k.main, k.side, k.ev, k.mem) == CUDA_ERROR_STREAM_CAPTURE_UNJOINED ? 0 : 1);
    }
    int r = pid > 0 ? wait_child(pid) : 2;
    hangs += r == 1;
    failed += r == 2;
  }
  stop = 1;
  for (int i = 0; i < threads && i < 64; i++)
    pthread_join(t[i], NULL);
  printf("children=%d\nhangs=%d\nfailed=%d\n", children, hangs, failed);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "hammer"))
    return hammer(atoi(argv[2]), atoi(argv[3]));
  bool quiet = argc == 4 && !strcmp(argv[1], "quiet");
  if (!quiet && !(argc == 3 && !strcmp(argv[1], "capture"))) {
    fprintf(stderr, "usage: fork_probe quiet N K | capture K | hammer THREADS CHILDREN\n");
    return 2;
  }
  set_up();
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  int n = quiet ? atoi(argv[2]) : 1, kids = atoi(argv[quiet ? 3 : 2]);
  for (int i = 0; i < n; i++)
    broken_capture(s);
  fflush(NULL);
  for (int i = 0; i < kids; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      if (!quiet)
        broken_capture(s);
      exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
  }
  return 0;
}
