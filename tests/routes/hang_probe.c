/* The hang watch's probe (test_hang.py), linked to the fake driver directly:
 *   sync          captures a graph on a stream, launches it there and
 *                 synchronizes the stream (FAKECUDA_SYNC_BLOCK_MS makes that
 *                 wait, as a rank whose peer never comes would);
 *   open SECONDS  begins a capture and leaves it open SECONDS (a plain sleep,
 *                 no driver call) before ending it;
 *   signalfd      synchronizes a stream (CUDA used: the watch runs), then
 *                 blocks SIGTERM and takes it through a signalfd, as a
 *                 server's shutdown does: prints "ready", waits up to 10 s
 *                 for SIGTERM, prints "got SIGTERM" (exit 0) or "no signal"
 *                 (exit 1);
 *   unshare       counts its threads, enters a new user namespace
 *                 (unshare(CLONE_NEWUSER), which a process of more than one
 *                 thread may not), then synchronizes a stream and counts
 *                 again: "threads=N unshare=OK|ERROR threads_after=M";
 *   reuse N       N threads, one after another, each synchronizes once and
 *                 exits; then one more synchronizes with
 *                 FAKECUDA_SYNC_BLOCK_MS=3000 (the wait to be said);
 *   cancel        a thread synchronizes with FAKECUDA_SYNC_BLOCK_MS=5000 and
 *                 is cancelled 200 ms in; then 2.5 s of nothing (a gone
 *                 thread must not be said to wait);
 *   launch nccl|busy N SLEEP_MS
 *                 captures a graph of one kernel, an NCCL one (named as
 *                 the driver names NCCL's, mangled:
 *                 "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL19ncclDevKernelArgs4K") or not
 *                 ("busy_spin"), launches it N times, then sleeps SLEEP_MS
 *                 (a rank that skips a collective) and synchronizes the
 *                 stream (FAKECUDA_LAUNCH_HOLD_MS/_AT hold a launch);
 *   teardown      captures and launches the NCCL graph once, then, its exec
 *                 alive, synchronizes the context with
 *                 FAKECUDA_SYNC_BLOCK_MS=2500 (a communicator's destroy
 *                 waiting) and exits with the exec alive;
 *   teardown-futex  the same, but the wait is on a condition variable (a
 *                 futex) for 2.5 s, outside the driver, as NCCL's destroy
 *                 waits for the graphs that hold its collectives;
 *   cudart-sync   synchronizes a stream through the libcudart stand-in
 *                 (bench/capture/cudart_bench.c: a few frames of its own,
 *                 as the real one has), FAKECUDA_SYNC_BLOCK_MS=2500: the
 *                 wait is to be named at this program's line, not the
 *                 stand-in's;
 *   capload NAME  captures a graph while loading a PTX image whose one kernel
 *                 is NAME (ranks that load different images during capture).
 * Prints done=1 when it got to its end. */
#include <cuda.h>

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "probe_check.h"

static CUcontext ctx;
static CUstream stream;

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

static void *sync_once(void *arg) {
  (void)arg;
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamSynchronize(stream));
  return NULL;
}

static void run_thread(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, sync_once, NULL) != 0 || pthread_join(t, NULL) != 0) {
    fprintf(stderr, "hang_probe: a thread could not run\n");
    exit(2);
  }
}

static int take_sigterm(void) {
  CHECK(cuStreamSynchronize(stream));
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, NULL);
  int fd = signalfd(-1, &term, SFD_CLOEXEC);
  printf("ready\n");
  fflush(stdout);
  struct pollfd p = {fd, POLLIN, 0};
  struct signalfd_siginfo si;
  if (fd < 0 || poll(&p, 1, 10000) != 1 || read(fd, &si, sizeof si) != (ssize_t)sizeof si ||
      si.ssi_signo != SIGTERM) {
    printf("no signal\n");
    return 1;
  }
  printf("got SIGTERM\n");
  return 0;
}

static void in_new_namespace(void) {
  int before = threads_now();
  int rc = unshare(CLONE_NEWUSER);
  CHECK(cuStreamSynchronize(stream));
  printf("threads=%d unshare=%s threads_after=%d\n", before, rc == 0 ? "OK" : "ERROR", threads_now());
}

static void cancelled(void) {
  setenv("FAKECUDA_SYNC_BLOCK_MS", "5000", 1);
  pthread_t t;
  if (pthread_create(&t, NULL, sync_once, NULL) != 0) {
    fprintf(stderr, "hang_probe: a thread could not run\n");
    exit(2);
  }
  sleep_ms(200);
  pthread_cancel(t);
  pthread_join(t, NULL);
  unsetenv("FAKECUDA_SYNC_BLOCK_MS");
  sleep_ms(2500);
}

static const char kernels_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                                  /* NCCL's kernels are C++ functions: the driver names them mangled */
                                  ".visible .entry _Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL19ncclDevKernelArgs4K()"
                                  "\n{\n ret;\n}\n"
                                  ".visible .entry busy_spin()\n{\n ret;\n}\n";

/* A graph of one kernel (nccl: the collective's), instantiated. */
static CUgraphExec one_kernel_graph(CUstream on, int nccl) {
  CUmodule m;
  CUfunction f;
  CUgraph g;
  CUgraphExec e;
  CHECK(cuModuleLoadData(&m, kernels_ptx));
  CHECK(cuModuleGetFunction(&f, m, nccl ? "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL19ncclDevKernelArgs4K" : "busy_spin"));
  CHECK(cuStreamBeginCapture_v2(on, CU_STREAM_CAPTURE_MODE_GLOBAL)); /* the graph's capture line */
  CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, on, NULL, NULL));
  CHECK(cuStreamEndCapture(on, &g));
  CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
  return e;
}

static int launches(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: hang_probe launch nccl|busy N SLEEP_MS\n");
    return 2;
  }
  CUgraphExec e = one_kernel_graph(stream, strcmp(argv[2], "nccl") == 0);
  for (int i = 0; i < atoi(argv[3]); i++)
    CHECK(cuGraphLaunch(e, stream));
  sleep_ms(atol(argv[4]));
  CHECK(cuStreamSynchronize(stream));
  printf("done=1\n");
  return 0;
}

static int capload(const char *name) {
  char img[256];
  snprintf(img, sizeof img, ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry %s()\n{\n ret;\n}\n", name);
  CUmodule m;
  CUgraph g;
  CUstream on = stream;
  CHECK(cuStreamBeginCapture_v2(on, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(cuModuleLoadData(&m, img));
  CHECK(cuStreamEndCapture(on, &g));
  printf("done=1\n");
  return 0;
}

static int teardown_futex(void) {
  CUgraphExec e = one_kernel_graph(stream, 1);
  CHECK(cuGraphLaunch(e, stream));
  CHECK(cuStreamSynchronize(stream));
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 2;
  until.tv_nsec += 500000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&m);
  while (pthread_cond_timedwait(&c, &m, &until) == 0) { /* the teardown's wait, outside the driver */
  }
  pthread_mutex_unlock(&m);
  printf("done=1\n");
  return 0;
}

int cg_bench_cudart_begin(void *fn, void *stream, int mode); /* the libcudart stand-in */

static __attribute__((noinline)) int cudart_sync(void) {
  setenv("FAKECUDA_SYNC_BLOCK_MS", "2500", 1);
  CHECK((CUresult)cg_bench_cudart_begin((void *)cuStreamSynchronize, stream, 0)); /* waits through "libcudart" */
  printf("done=1\n");
  return 0;
}

static int teardown(void) {
  CUgraphExec e = one_kernel_graph(stream, 1);
  CHECK(cuGraphLaunch(e, stream));
  CHECK(cuStreamSynchronize(stream));
  setenv("FAKECUDA_SYNC_BLOCK_MS", "2500", 1);
  CHECK(cuCtxSynchronize()); /* the teardown's wait */
  printf("done=1\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: hang_probe sync | open SECONDS | signalfd | unshare | reuse N | cancel | launch nccl|busy N MS | teardown\n");
    return 2;
  }
  CUgraph g;
  ctx = probe_primary_context();
  CUstream s;
  if (strcmp(argv[1], "unshare") == 0) {
    /* the stream made through the fake directly (cuStreamCreate is not
     * wrapped): nothing of capguard's has run but its constructor */
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    in_new_namespace();
    printf("done=1\n");
    return 0;
  }
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  stream = s;
  if (strcmp(argv[1], "signalfd") == 0)
    return take_sigterm();
  if (strcmp(argv[1], "launch") == 0)
    return launches(argc, argv);
  if (strcmp(argv[1], "teardown") == 0)
    return teardown();
  if (strcmp(argv[1], "teardown-futex") == 0)
    return teardown_futex();
  if (strcmp(argv[1], "cudart-sync") == 0)
    return cudart_sync();
  if (strcmp(argv[1], "capload") == 0 && argc > 2)
    return capload(argv[2]);
  if (strcmp(argv[1], "reuse") == 0 || strcmp(argv[1], "cancel") == 0) {
    if (strcmp(argv[1], "cancel") == 0)
      cancelled();
    else {
      for (int i = 0; i < (argc > 2 ? atoi(argv[2]) : 600); i++)
        run_thread();
      setenv("FAKECUDA_SYNC_BLOCK_MS", "3000", 1);
      run_thread();
    }
    printf("done=1\n");
    return 0;
  }
  CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  if (strcmp(argv[1], "open") == 0) {
    struct timespec t = {argc > 2 ? atoi(argv[2]) : 2, 0};
    nanosleep(&t, NULL);
    CHECK(cuStreamEndCapture(s, &g));
  } else {
    CUgraphExec e;
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
    CHECK(cuGraphLaunch(e, s));
    CHECK(cuStreamSynchronize(s));
  }
  printf("done=1\n");
  return 0;
}
