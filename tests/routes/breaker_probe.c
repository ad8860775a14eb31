/* Makes one capture and, in it, one of the calls that break captures on
 * every driver (--op), reached one way (--route: the exported symbol when
 * built with -DROUTE_DIRECT, dlsym or cuGetProcAddress otherwise), from the
 * capturing thread or another one (--thread), in every capture and thread
 * mode (--mode, --swap). --repeat N makes the call N times, --then OP makes
 * a second call after it (first-offender tests), --watchdog MS polls
 * cuEventQuery on an event recorded in the capture from another thread for
 * MS milliseconds, as NCCL's watchdog does. After the capture it checks what
 * a deferred call left behind. Prints key=value lines for test_breakers.py. */
#include <cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*BeginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*EndCapture)(CUstream, CUgraph *);
  CUresult (*ExchangeMode)(CUstreamCaptureMode *);
  CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*EventCreate)(CUevent *, unsigned);
  /* the breakers */
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
  CUresult (*MemAllocHost)(void **, size_t);
  CUresult (*MemHostAlloc)(void **, size_t, unsigned);
  CUresult (*MemHostRegister)(void *, size_t, unsigned);
  CUresult (*MemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemFreeHost)(void *);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*CtxSetLimit)(CUlimit, size_t);
  CUresult (*CtxSynchronize)(void);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamQuery)(CUstream);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventQuery)(CUevent);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*MemHostUnregister)(void *);
} api;

static api cu;
static struct {
  const char *route, *op, *then;
  CUstreamCaptureMode mode;
  int other_thread, swap, repeat, watchdog_ms, ptsz;
} opt = {.route = "dlsym", .op = "none", .mode = CU_STREAM_CAPTURE_MODE_GLOBAL, .repeat = 1};

static void die(const char *what) {
  fprintf(stderr, "breaker_probe: %s\n", what);
  exit(2);
}

#ifdef ROUTE_DIRECT
static void bind_api(void) {
  cu = (api){cuInit, cuDeviceGet, cuDevicePrimaryCtxRetain, cuCtxSetCurrent, cuStreamCreate,
             cuStreamBeginCapture_v2, cuStreamEndCapture, cuThreadExchangeStreamCaptureMode,
             cuGraphInstantiateWithFlags, cuGraphLaunch, cuEventCreate, cuMemAlloc_v2, cuMemAllocPitch_v2,
             cuMemAllocHost_v2, cuMemHostAlloc, cuMemHostRegister_v2, cuMemAllocManaged, cuMemFree_v2,
             cuMemFreeHost, cuGraphExecDestroy, cuCtxSetLimit, cuCtxSynchronize, cuStreamSynchronize,
             cuStreamQuery, cuEventRecord, cuEventQuery, cuEventSynchronize, cuMemHostUnregister};
}
#else
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static void *libcuda;
static gpa_fn gpa;

/* dlsym takes the exported (versioned) name; cuGetProcAddress the base
 * name at the version cudart 12 asks for, as torch does (--ptsz: with the
 * per-thread default stream flag, which hands out the _ptsz variants). */
static void *lookup(const char *exported, const char *base) {
  void *p = NULL;
  if (!strcmp(opt.route, "dlsym"))
    p = dlsym(libcuda, exported);
  else if (gpa(base, &p, 12000, opt.ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, NULL) !=
           CUDA_SUCCESS)
    p = NULL;
  if (!p)
    fprintf(stderr, "breaker_probe: %s not found by %s\n", base, opt.route);
  return p;
}
#define GET(field, exported, base) cu.field = (__typeof__(cu.field))lookup(exported, base)

static void bind_api(void) {
  if (!(libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
    die(dlerror());
  if (!strcmp(opt.route, "procaddr")) {
    gpa_fn v2 = (gpa_fn)dlsym(libcuda, "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult st;
    if (!v2 || v2("cuGetProcAddress", (void **)&gpa, 12000, 0, &st) != CUDA_SUCCESS || !gpa)
      die("cuGetProcAddress bootstrap failed");
  }
  GET(Init, "cuInit", "cuInit");
  GET(DeviceGet, "cuDeviceGet", "cuDeviceGet");
  GET(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
  GET(CtxSetCurrent, "cuCtxSetCurrent", "cuCtxSetCurrent");
  GET(StreamCreate, "cuStreamCreate", "cuStreamCreate");
  GET(BeginCapture, "cuStreamBeginCapture_v2", "cuStreamBeginCapture");
  GET(EndCapture, "cuStreamEndCapture", "cuStreamEndCapture");
  GET(ExchangeMode, "cuThreadExchangeStreamCaptureMode", "cuThreadExchangeStreamCaptureMode");
  GET(GraphInstantiate, "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags");
  GET(GraphLaunch, "cuGraphLaunch", "cuGraphLaunch");
  GET(EventCreate, "cuEventCreate", "cuEventCreate");
  GET(MemAlloc, "cuMemAlloc_v2", "cuMemAlloc");
  GET(MemAllocPitch, "cuMemAllocPitch_v2", "cuMemAllocPitch");
  GET(MemAllocHost, "cuMemAllocHost_v2", "cuMemAllocHost");
  GET(MemHostAlloc, "cuMemHostAlloc", "cuMemHostAlloc");
  GET(MemHostRegister, "cuMemHostRegister_v2", "cuMemHostRegister");
  GET(MemAllocManaged, "cuMemAllocManaged", "cuMemAllocManaged");
  GET(MemFree, "cuMemFree_v2", "cuMemFree");
  GET(MemFreeHost, "cuMemFreeHost", "cuMemFreeHost");
  GET(GraphExecDestroy, "cuGraphExecDestroy", "cuGraphExecDestroy");
  GET(CtxSetLimit, "cuCtxSetLimit", "cuCtxSetLimit");
  GET(CtxSynchronize, "cuCtxSynchronize", "cuCtxSynchronize");
  GET(StreamSynchronize, "cuStreamSynchronize", "cuStreamSynchronize");
  GET(StreamQuery, "cuStreamQuery", "cuStreamQuery");
  GET(EventRecord, "cuEventRecord", "cuEventRecord");
  GET(EventQuery, "cuEventQuery", "cuEventQuery");
  GET(EventSynchronize, "cuEventSynchronize", "cuEventSynchronize");
  GET(MemHostUnregister, "cuMemHostUnregister", "cuMemHostUnregister");
}
#endif

/* What the ops work on, made before the capture. */
static CUcontext ctx;
static CUstream capturing, idle;
static CUevent recorded_before, recorded_in;
static CUdeviceptr pre_mem, new_mem;
static void *pre_host, *new_host;
static CUgraphExec pre_exec;
static char registered[4096], pre_registered[4096];

/* The fake driver's test hook: a call that breaks every open capture and
 * that capguard does not watch (tests/fakecuda/README.md). */
static CUresult unwatched(void) {
  void *fake = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CUresult (*hook)(void) = fake ? (CUresult(*)(void))dlsym(fake, "cuFakeBreakCaptures") : NULL;
  if (!hook)
    die("no cuFakeBreakCaptures: not the fake driver");
  return hook();
}

static CUresult op(const char *name) {
  size_t pitch;
  if (!strcmp(name, "alloc")) return cu.MemAlloc(&new_mem, 4096);
  if (!strcmp(name, "pitch")) return cu.MemAllocPitch(&new_mem, &pitch, 256, 4, 4);
  if (!strcmp(name, "allochost")) return cu.MemAllocHost(&new_host, 4096);
  if (!strcmp(name, "hostalloc")) return cu.MemHostAlloc(&new_host, 4096, 0);
  if (!strcmp(name, "hostregister")) return cu.MemHostRegister(registered, sizeof registered, 0);
  if (!strcmp(name, "hostunregister")) return cu.MemHostUnregister(pre_registered);
  if (!strcmp(name, "managed")) return cu.MemAllocManaged(&new_mem, 4096, CU_MEM_ATTACH_GLOBAL);
  if (!strcmp(name, "free")) return cu.MemFree(pre_mem);
  if (!strcmp(name, "freehost")) return cu.MemFreeHost(pre_host);
  if (!strcmp(name, "execdestroy")) return cu.GraphExecDestroy(pre_exec);
  if (!strcmp(name, "setlimit")) return cu.CtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20);
  if (!strcmp(name, "ctxsync")) return cu.CtxSynchronize();
  if (!strcmp(name, "streamsync")) return cu.StreamSynchronize(capturing);
  if (!strcmp(name, "streamquery")) return cu.StreamQuery(capturing);
  if (!strcmp(name, "idlesync")) return cu.StreamSynchronize(idle);
  if (!strcmp(name, "eventquery")) return cu.EventQuery(recorded_in);
  if (!strcmp(name, "eventsync")) return cu.EventSynchronize(recorded_in);
  if (!strcmp(name, "prequery")) return cu.EventQuery(recorded_before);
  if (!strcmp(name, "unwatched")) return unwatched();
  if (!strcmp(name, "none")) return CUDA_SUCCESS;
  die("unknown op");
  return CUDA_ERROR_UNKNOWN;
}

static CUresult op_result, then_result = -1;

/* The ops on the calling thread, switched to relaxed mode around them with
 * --swap (the ground truth's "+swap" columns). */
static void *do_ops(void *arg) {
  if (arg)
    cu.CtxSetCurrent(ctx);
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (opt.swap)
    cu.ExchangeMode(&m);
  for (int i = 0; i < opt.repeat; i++)
    op_result = op(opt.op);
  if (opt.then)
    then_result = op(opt.then);
  if (opt.swap)
    cu.ExchangeMode(&m);
  return NULL;
}

/* A watchdog: polls the event recorded in the capture until told to stop. */
static volatile int watchdog_stop;
static int polls, polls_not_ready, polls_other;
static CUresult poll_other = CUDA_SUCCESS;
static void *watchdog(void *arg) {
  (void)arg;
  cu.CtxSetCurrent(ctx);
  while (!watchdog_stop) {
    CUresult r = cu.EventQuery(recorded_in);
    polls++;
    if (r == CUDA_ERROR_NOT_READY)
      polls_not_ready++;
    else {
      polls_other++;
      poll_other = r;
    }
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static CUstreamCaptureMode parse_mode(const char *m) {
  return !strcmp(m, "global") ? CU_STREAM_CAPTURE_MODE_GLOBAL
         : !strcmp(m, "thread-local") ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                      : CU_STREAM_CAPTURE_MODE_RELAXED;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--route") && v) opt.route = argv[++i];
    else if (!strcmp(a, "--op") && v) opt.op = argv[++i];
    else if (!strcmp(a, "--then") && v) opt.then = argv[++i];
    else if (!strcmp(a, "--mode") && v) opt.mode = parse_mode(argv[++i]);
    else if (!strcmp(a, "--thread") && v) opt.other_thread = !strcmp(argv[++i], "other");
    else if (!strcmp(a, "--swap")) opt.swap = 1;
    else if (!strcmp(a, "--repeat") && v) opt.repeat = atoi(argv[++i]);
    else if (!strcmp(a, "--watchdog") && v) opt.watchdog_ms = atoi(argv[++i]);
    else if (!strcmp(a, "--ptsz")) opt.ptsz = 1;
    else die("usage: breaker_probe [--route direct|dlsym|procaddr] --op OP [--then OP] [--mode M] "
             "[--thread same|other] [--swap] [--repeat N] [--watchdog MS]");
  }
  bind_api();
  CUdevice dev;
  if (cu.Init(0) || cu.DeviceGet(&dev, 0) || cu.DevicePrimaryCtxRetain(&ctx, dev) || cu.CtxSetCurrent(ctx) ||
      cu.StreamCreate(&capturing, CU_STREAM_NON_BLOCKING) || cu.StreamCreate(&idle, CU_STREAM_NON_BLOCKING))
    die("driver set-up failed");
  if (cu.EventCreate(&recorded_before, 0) || cu.EventCreate(&recorded_in, 0) ||
      cu.EventRecord(recorded_before, idle))
    die("event set-up failed");
  if (cu.MemAlloc(&pre_mem, 4096) || cu.MemHostAlloc(&pre_host, 4096, 0) ||
      cu.MemHostRegister(pre_registered, sizeof pre_registered, 0))
    die("memory set-up failed");
  /* An executable graph made before the capture, for execdestroy. */
  CUgraph g0 = NULL;
  if (cu.BeginCapture(idle, CU_STREAM_CAPTURE_MODE_GLOBAL) || cu.EndCapture(idle, &g0) ||
      cu.GraphInstantiate(&pre_exec, g0, 0))
    die("graph set-up failed");

  printf("begin_result=%d\n", (int)cu.BeginCapture(capturing, opt.mode));
  printf("record_result=%d\n", (int)cu.EventRecord(recorded_in, capturing));
  pthread_t dog;
  if (opt.watchdog_ms) {
    pthread_create(&dog, NULL, watchdog, NULL);
    struct timespec ts = {opt.watchdog_ms / 1000, (long)(opt.watchdog_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (opt.other_thread) {
    pthread_t t;
    pthread_create(&t, NULL, do_ops, &ctx);
    pthread_join(t, NULL);
  } else {
    do_ops(NULL);
  }
  if (opt.watchdog_ms) {
    watchdog_stop = 1;
    pthread_join(dog, NULL);
    printf("polls=%d\npolls_not_ready=%d\npolls_other=%d\npoll_other_result=%d\n", polls, polls_not_ready,
           polls_other, (int)poll_other);
  }
  printf("op_result=%d\n", (int)op_result);
  if (opt.then)
    printf("then_result=%d\n", (int)then_result);
  CUgraph g = NULL;
  CUresult end = cu.EndCapture(capturing, &g);
  printf("end_result=%d\ngraph=%d\n", (int)end, g != NULL);
  if (g) {
    CUgraphExec x;
    CUresult r = cu.GraphInstantiate(&x, g, 0);
    if (r == CUDA_SUCCESS)
      r = cu.GraphLaunch(x, capturing);
    printf("replay_result=%d\n", (int)r);
  }
  /* What a deferred call left: the memory freed and the graph destroyed once
   * the capture ended (a second free or destroy is then refused). */
  if (!strcmp(opt.op, "free"))
    printf("again_result=%d\n", (int)cu.MemFree(pre_mem));
  if (!strcmp(opt.op, "freehost"))
    printf("again_result=%d\n", (int)cu.MemFreeHost(pre_host));
  if (!strcmp(opt.op, "execdestroy"))
    printf("again_result=%d\n", (int)cu.GraphExecDestroy(pre_exec));
  printf("after_sync_result=%d\n", (int)cu.CtxSynchronize());
  return 0;
}
