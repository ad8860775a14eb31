/* The third matrix under capguard: one capture (on a blocking stream with
 * --blocking, else non-blocking; --mode) holding one kernel, and in it one
 * --op, made by the capturing thread or another one (--thread other),
 * reached by the exported symbol (built with -DROUTE_DIRECT) or by dlsym:
 *   legacy-launch, legacy-launch-ex, legacy-coop, legacy-memcpy,
 *   legacy-memset: work on the legacy stream (906, or escaping the graph);
 *   per-thread-launch: a launch on CU_STREAM_PER_THREAD (fine);
 *   wait-before, wait-never: cuStreamWaitEvent on an event recorded before
 *   the capture (905) or never recorded (fine);
 *   graph-launch: cuGraphLaunch of an earlier graph into the capture (900);
 *   fork-unjoined: a stream forked into the capture with a kernel on it and
 *   never joined back (the end returns 904);
 *   fork-joined-then-work: a fork joined back, then more work on it (904);
 *   end-other: the capture is ended by another thread (908 unless relaxed);
 *   pageable-copy: cuMemcpyHtoDAsync from pageable memory into the capture;
 *   pinned-copy: the same from page-locked memory (fine);
 *   fork-pageable-copy: the pageable copy on a stream forked into the
 *   capture, then joined back (capguard finds the capture by the driver's
 *   id of the stream's capture);
 *   unwatched: the fake's cuFakeUnwatchedRefusal, a call capguard does not
 *   wrap that the driver refuses (900) and logs;
 *   unwatched-host-func: cuLaunchHostFunc on the legacy stream, which capguard
 *   does not wrap and the fake refuses as legacy-stream work (906) and logs.
 * --reused-stream: first a stream of the other kind (non-blocking with
 * --blocking) captures once and is destroyed, so that the capturing stream
 * gets its handle again (prints reused=1 when it did).
 * --repeat N makes the op N times. --own-log registers the program's own
 * driver log callback (drivers 12.9 and later) and prints how many lines it
 * got. Prints op_result=, end_result= for test_escapes.py. */
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_check.h"

#define API(X)                                                                                     \
  X(Init, cuInit, CUresult (*)(unsigned))                                                          \
  X(DeviceGet, cuDeviceGet, CUresult (*)(CUdevice *, int))                                         \
  X(Retain, cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext *, CUdevice))                         \
  X(SetCurrent, cuCtxSetCurrent, CUresult (*)(CUcontext))                                          \
  X(StreamCreate, cuStreamCreate, CUresult (*)(CUstream *, unsigned))                              \
  X(StreamDestroy, cuStreamDestroy_v2, CUresult (*)(CUstream))                                     \
  X(Begin, cuStreamBeginCapture_v2, CUresult (*)(CUstream, CUstreamCaptureMode))                   \
  X(End, cuStreamEndCapture, CUresult (*)(CUstream, CUgraph *))                                    \
  X(Instantiate, cuGraphInstantiateWithFlags, CUresult (*)(CUgraphExec *, CUgraph, unsigned long long)) \
  X(GraphLaunch, cuGraphLaunch, CUresult (*)(CUgraphExec, CUstream))                               \
  X(EventCreate, cuEventCreate, CUresult (*)(CUevent *, unsigned))                                 \
  X(EventRecord, cuEventRecord, CUresult (*)(CUevent, CUstream))                                   \
  X(WaitEvent, cuStreamWaitEvent, CUresult (*)(CUstream, CUevent, unsigned))                       \
  X(ModuleLoad, cuModuleLoad, CUresult (*)(CUmodule *, const char *))                              \
  X(GetFunction, cuModuleGetFunction, CUresult (*)(CUfunction *, CUmodule, const char *))          \
  X(Launch, cuLaunchKernel,                                                                        \
    CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
                 void **, void **))                                                                \
  X(LaunchEx, cuLaunchKernelEx, CUresult (*)(const CUlaunchConfig *, CUfunction, void **, void **)) \
  X(LaunchCoop, cuLaunchCooperativeKernel,                                                         \
    CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
                 void **))                                                                         \
  X(MemAlloc, cuMemAlloc_v2, CUresult (*)(CUdeviceptr *, size_t))                                  \
  X(MemAllocHost, cuMemAllocHost_v2, CUresult (*)(void **, size_t))                                 \
  X(MemcpyHtoD, cuMemcpyHtoD_v2, CUresult (*)(CUdeviceptr, const void *, size_t))                  \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, CUresult (*)(CUdeviceptr, const void *, size_t, CUstream)) \
  X(MemsetD8, cuMemsetD8_v2, CUresult (*)(CUdeviceptr, unsigned char, size_t))                     \
  X(LaunchHostFunc, cuLaunchHostFunc, CUresult (*)(CUstream, CUhostFn, void *))

static struct {
#define FIELD(f, name, type) __typeof__(type) f;
  API(FIELD)
} cu;

static void die(const char *what) {
  fprintf(stderr, "escape_probe: %s\n", what);
  exit(2);
}

static void bind_api(const char *route) {
#ifdef ROUTE_DIRECT
  (void)route;
#define DIRECT(f, name, type) cu.f = (type)name;
  API(DIRECT)
#else
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h || strcmp(route, "dlsym"))
    die("dlsym route only (or build with -DROUTE_DIRECT)");
#define LOOKUP(f, name, type)                                                                      \
  if (!(cu.f = (type)dlsym(h, #name)))                                                             \
    die(#name " not found");
  API(LOOKUP)
#endif
}

static const char *op = "none";
static int blocking, other, repeat = 1, reused_stream;
static CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static CUcontext ctx;
static CUstream capturing, side;
static CUfunction fn;
static CUevent before, never, fork_ev;
static CUdeviceptr mem;
static CUgraphExec earlier;
static unsigned char pageable[64];
static void *pinned;
static int own_log, own_lines;

static void CUDA_CB on_own_log(void *data, CUlogLevel level, char *message, size_t length) {
  (void)data, (void)level, (void)message, (void)length;
  __atomic_add_fetch(&own_lines, 1, __ATOMIC_RELAXED);
}

static void CUDA_CB host_nop(void *data) { (void)data; }

static CUresult launch_on(CUstream s) { return cu.Launch(fn, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL); }

static CUresult do_op(void) {
  if (!strcmp(op, "legacy-launch"))
    return launch_on(NULL);
  if (!strcmp(op, "legacy-launch-ex")) {
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32;
    cfg.blockDimY = cfg.blockDimZ = 1;
    return cu.LaunchEx(&cfg, fn, NULL, NULL);
  }
  if (!strcmp(op, "legacy-coop"))
    return cu.LaunchCoop(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL);
  if (!strcmp(op, "legacy-memcpy"))
    return cu.MemcpyHtoD(mem, pageable, sizeof pageable);
  if (!strcmp(op, "legacy-memset"))
    return cu.MemsetD8(mem, 7, sizeof pageable);
  if (!strcmp(op, "per-thread-launch"))
    return launch_on(CU_STREAM_PER_THREAD);
  if (!strcmp(op, "wait-before"))
    return cu.WaitEvent(capturing, before, 0);
  if (!strcmp(op, "wait-never"))
    return cu.WaitEvent(capturing, never, 0);
  if (!strcmp(op, "graph-launch"))
    return cu.GraphLaunch(earlier, capturing);
  if (!strcmp(op, "fork-unjoined")) {
    CUresult r = cu.EventRecord(fork_ev, capturing);
    if (r == CUDA_SUCCESS)
      r = cu.WaitEvent(side, fork_ev, 0);
    return r == CUDA_SUCCESS ? launch_on(side) : r;
  }
  if (!strcmp(op, "fork-joined-then-work")) {
    CUresult r = cu.EventRecord(fork_ev, capturing);
    if (r == CUDA_SUCCESS)
      r = cu.WaitEvent(side, fork_ev, 0);
    if (r == CUDA_SUCCESS)
      r = launch_on(side);
    if (r == CUDA_SUCCESS)
      r = cu.EventRecord(before, side); /* reused as the join event */
    if (r == CUDA_SUCCESS)
      r = cu.WaitEvent(capturing, before, 0);
    return r == CUDA_SUCCESS ? launch_on(side) : r; /* work after the join, never joined */
  }
  if (!strcmp(op, "end-other"))
    return CUDA_SUCCESS; /* main's end is made by another thread */
  if (!strcmp(op, "pageable-copy"))
    return cu.MemcpyHtoDAsync(mem, pageable, sizeof pageable, capturing);
  if (!strcmp(op, "fork-pageable-copy")) {
    CUresult r = cu.EventRecord(fork_ev, capturing);
    if (r == CUDA_SUCCESS)
      r = cu.WaitEvent(side, fork_ev, 0);
    if (r == CUDA_SUCCESS)
      r = cu.MemcpyHtoDAsync(mem, pageable, sizeof pageable, side);
    if (r == CUDA_SUCCESS)
      r = cu.EventRecord(before, side); /* reused as the join event */
    return r == CUDA_SUCCESS ? cu.WaitEvent(capturing, before, 0) : r;
  }
  if (!strcmp(op, "pinned-copy"))
    return cu.MemcpyHtoDAsync(mem, pinned, 64, capturing);
  if (!strcmp(op, "unwatched-host-func"))
    return cu.LaunchHostFunc(NULL, host_nop, NULL);
  if (!strcmp(op, "unwatched")) {
    CUresult (*brk)(void) = (CUresult(*)(void))dlsym(RTLD_DEFAULT, "cuFakeUnwatchedRefusal");
    return brk ? brk() : CUDA_ERROR_NOT_FOUND;
  }
  die("unknown --op");
  return CUDA_ERROR_UNKNOWN;
}

static CUresult op_result, end_result;
static CUgraph end_graph;
static void *end_thread(void *arg) {
  (void)arg;
  if (cu.SetCurrent(ctx) == CUDA_SUCCESS)
    end_result = cu.End(capturing, &end_graph);
  return NULL;
}
static void *op_thread(void *arg) {
  (void)arg;
  CHECK(cu.SetCurrent(ctx));
  for (int i = 0; i < repeat; i++)
    op_result = do_op();
  return NULL;
}

int main(int argc, char **argv) {
  const char *route = "dlsym";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--route")) route = v, i++;
    else if (!strcmp(a, "--op")) op = v, i++;
    else if (!strcmp(a, "--thread")) other = !strcmp(v, "other"), i++;
    else if (!strcmp(a, "--repeat")) repeat = atoi(v), i++;
    else if (!strcmp(a, "--blocking")) blocking = 1;
    else if (!strcmp(a, "--reused-stream")) reused_stream = 1;
    else if (!strcmp(a, "--own-log")) own_log = 1;
    else if (!strcmp(a, "--mode")) {
      mode = !strcmp(v, "relaxed") ? CU_STREAM_CAPTURE_MODE_RELAXED
             : !strcmp(v, "thread-local") ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                          : CU_STREAM_CAPTURE_MODE_GLOBAL;
      i++;
    } else die("unknown argument");
  }
  bind_api(route);
  CUdevice dev;
  CUmodule mod;
  CHECK(cu.Init(0));
  CHECK(cu.DeviceGet(&dev, 0));
  CHECK(cu.Retain(&ctx, dev));
  CHECK(cu.SetCurrent(ctx));
  if (own_log) {
    CUresult (*reg)(CUlogsCallback, void *, CUlogsCallbackHandle *) =
        (CUresult(*)(CUlogsCallback, void *, CUlogsCallbackHandle *))dlsym(RTLD_DEFAULT, "cuLogsRegisterCallback");
    CUlogsCallbackHandle h;
    if (!reg || reg(on_own_log, NULL, &h) != CUDA_SUCCESS)
      die("cuLogsRegisterCallback failed");
  }
  const char *cubin = getenv("CG_CUBIN");
  if (!cubin)
    die("CG_CUBIN not set");
  CHECK(cu.ModuleLoad(&mod, cubin));
  CHECK(cu.GetFunction(&fn, mod, "fake_add_one"));
  CUstream gone = NULL;
  if (reused_stream) {
    /* A stream of the other kind, begun on (with a mode the driver refuses:
     * the fake keeps a stream that captured as a tombstone, never handing
     * its handle out again; capguard looks at the stream before the
     * driver's answer all the same), then destroyed. */
    CUstream fill[7];
    for (int i = 0; i < 7; i++)
      CHECK(cu.StreamCreate(&fill[i], 0));
    CHECK(cu.StreamCreate(&gone, blocking ? CU_STREAM_NON_BLOCKING : 0));
    if (cu.Begin(gone, (CUstreamCaptureMode)99) == CUDA_SUCCESS)
      die("a begin with mode 99 was accepted");
    /* glibc's calloc (the fake's streams) skips the 7 blocks its per-thread
     * cache keeps: the one freed after them is the next handed out. */
    for (int i = 0; i < 7; i++)
      CHECK(cu.StreamDestroy(fill[i]));
    CHECK(cu.StreamDestroy(gone));
  }
  CHECK(cu.StreamCreate(&capturing, blocking ? 0 : CU_STREAM_NON_BLOCKING));
  if (reused_stream)
    printf("reused=%d\n", capturing == gone);
  CHECK(cu.StreamCreate(&side, CU_STREAM_NON_BLOCKING));
  CHECK(cu.EventCreate(&before, 0));
  CHECK(cu.EventCreate(&never, 0));
  CHECK(cu.EventCreate(&fork_ev, 0));
  CHECK(cu.EventRecord(before, capturing));
  CHECK(cu.MemAlloc(&mem, sizeof pageable));
  CHECK(cu.MemAllocHost(&pinned, 64));
  /* An earlier graph, for graph-launch. */
  CUgraph g;
  CHECK(cu.Begin(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(launch_on(capturing));
  CHECK(cu.End(capturing, &g));
  CHECK(cu.Instantiate(&earlier, g, 0));

  CHECK(cu.Begin(capturing, mode));
  CHECK(launch_on(capturing));
  if (other) {
    pthread_t t;
    pthread_create(&t, NULL, op_thread, NULL);
    pthread_join(t, NULL);
  } else {
    for (int i = 0; i < repeat; i++)
      op_result = do_op();
  }
  CUresult end;
  if (!strcmp(op, "end-other")) {
    pthread_t t;
    pthread_create(&t, NULL, end_thread, NULL);
    pthread_join(t, NULL);
    end = end_result;
  } else {
    end = cu.End(capturing, &g);
  }
  printf("op_result=%d\nend_result=%d\nown_log_lines=%d\n", (int)op_result, (int)end, own_lines);
  return 0;
}
