/* Reaches the driver one way (--route), makes one capture, and makes one call
 * mid-capture from the capturing thread or another one, in every capture and
 * thread mode. Prints what the driver (or capguard) answered, one key=value
 * per line, for run_routes.py to check. Built twice: linked against libcuda
 * (-DROUTE_DIRECT, the exported-symbol route) and not linked (dlsym and
 * cuGetProcAddress routes).
 *
 * Priming and deferred-unload options (test_priming.py): --op libunload
 * (unload a library loaded before capture), --unload-loaded in|after (the
 * program unloads the module its op got, inside the capture or after its
 * end), --no-end (exit with the capture still open), --print-mode (the
 * driver's mode for this thread after the op), and --second MODE: another
 * thread holds a capture of its own (--second-ctx: on a context it creates;
 * --second-begin and --second-end: before or after the main capture's).
 * --guard-image: the image's bytes end right before a PROT_NONE page, so a
 * read past what the file holds faults (hostile-image tests). */
#include <cuda.h>

#include "capguard/file_read.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*BeginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*BeginCaptureV1)(CUstream);
  CUresult (*EndCapture)(CUstream, CUgraph *);
  CUresult (*ExchangeMode)(CUstreamCaptureMode *);
  CUresult (*ModuleLoad)(CUmodule *, const char *);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
  CUresult (*ModuleLoadFatBinary)(CUmodule *, const void *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*LibraryLoadData)(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *,
                              void **, unsigned);
  CUresult (*LibraryUnload)(CUlibrary);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void **, void **);
  CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
  CUresult (*GraphKernelNodeGetParams)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
  CUresult (*FuncGetName)(const char **, CUfunction);
  CUresult (*DeviceGetCount)(int *); /* never wrapped: must be the driver's own pointer */
  CUresult (*CtxCreate)(CUcontext *, CUctxCreateParams *, unsigned, CUdevice);
} api;

static api cu;
static struct {
  const char *route, *op, *image_path, *launch;
  CUstreamCaptureMode mode;
  const char *unload_loaded;  /* NULL, "in" or "after" */
  const char *second_begin, *second_end; /* "before" or "after" the main capture's */
  CUstreamCaptureMode second_mode;
  int other_thread, swap, v1, proc_flags, proc_version, repeat;
  int no_end, print_mode, second, second_ctx, guard_image;
} opt = {.second_begin = "after", .second_end = "after",.route = "dlsym", .op = "load", .mode = CU_STREAM_CAPTURE_MODE_GLOBAL, .proc_version = 12000,
         .proc_flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, .repeat = 1};

static void *image;
static CUcontext ctx;
static CUdevice dev;
static CUmodule warm_module;
static CUlibrary warm_library;
static CUresult op_result;

static void die(const char *what) {
  fprintf(stderr, "route_probe: %s\n", what);
  exit(2);
}

#define GET(field, name) cu.field = (__typeof__(cu.field))lookup(name)

#ifdef ROUTE_DIRECT
static void bind_api(void) {
  cu.Init = cuInit;
  cu.DeviceGet = cuDeviceGet;
  cu.DevicePrimaryCtxRetain = cuDevicePrimaryCtxRetain;
  cu.CtxSetCurrent = cuCtxSetCurrent;
  cu.StreamCreate = cuStreamCreate;
  cu.BeginCapture = cuStreamBeginCapture_v2;
  cu.EndCapture = cuStreamEndCapture;
  cu.ExchangeMode = cuThreadExchangeStreamCaptureMode;
  cu.ModuleLoad = cuModuleLoad;
  cu.ModuleLoadData = cuModuleLoadData;
  cu.ModuleLoadDataEx = cuModuleLoadDataEx;
  cu.ModuleLoadFatBinary = cuModuleLoadFatBinary;
  cu.ModuleUnload = cuModuleUnload;
  cu.ModuleGetFunction = cuModuleGetFunction;
  cu.LibraryLoadData = cuLibraryLoadData;
  cu.LibraryUnload = cuLibraryUnload;
  cu.LaunchKernel = cuLaunchKernel;
  cu.GraphGetNodes = cuGraphGetNodes;
  cu.GraphKernelNodeGetParams = cuGraphKernelNodeGetParams;
  cu.FuncGetName = cuFuncGetName;
  cu.DeviceGetCount = cuDeviceGetCount;
  cu.CtxCreate = cuCtxCreate;
}
#else
static void *libcuda;
typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static gpa_fn gpa;

/* The cudart bootstrap: fetch cuGetProcAddress_v2 with dlsym, ask it for
 * "cuGetProcAddress", resolve everything else through what it returns. */
static void bootstrap_proc_address(void) {
  gpa_fn v2 = (gpa_fn)dlsym(libcuda, "cuGetProcAddress_v2");
  if (!v2)
    die("no cuGetProcAddress_v2");
  CUdriverProcAddressQueryResult st;
  if (v2("cuGetProcAddress", (void **)&gpa, 12000, 0, &st) != CUDA_SUCCESS || !gpa)
    die("cuGetProcAddress bootstrap failed");
}

static void *lookup(const char *name) {
  void *p = NULL;
  if (strcmp(opt.route, "dlsym") == 0)
    p = dlsym(libcuda, name);
  else {
    int version = opt.proc_version;
    if (strcmp(name, "cuStreamBeginCapture") && strcmp(name, "cuStreamEndCapture"))
      version = 12000;
    /* symbolStatus may be NULL: ask once without it. */
    if (gpa(name, &p, version, (cuuint64_t)opt.proc_flags, NULL) != CUDA_SUCCESS)
      p = NULL;
  }
  return p;
}

static void bind_api(void) {
  libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!libcuda)
    die(dlerror());
  if (strcmp(opt.route, "procaddr") == 0)
    bootstrap_proc_address();
  GET(Init, "cuInit");
  GET(DeviceGet, "cuDeviceGet");
  GET(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  GET(CtxSetCurrent, "cuCtxSetCurrent");
  GET(StreamCreate, "cuStreamCreate");
  if (strcmp(opt.route, "dlsym") == 0) {
    GET(BeginCapture, "cuStreamBeginCapture_v2");
    GET(BeginCaptureV1, "cuStreamBeginCapture");
  } else if (opt.proc_version < 10010)
    GET(BeginCaptureV1, "cuStreamBeginCapture");
  else
    GET(BeginCapture, "cuStreamBeginCapture");
  GET(EndCapture, "cuStreamEndCapture");
  GET(ExchangeMode, "cuThreadExchangeStreamCaptureMode");
  GET(ModuleLoad, "cuModuleLoad");
  GET(ModuleLoadData, "cuModuleLoadData");
  GET(ModuleLoadDataEx, "cuModuleLoadDataEx");
  GET(ModuleLoadFatBinary, "cuModuleLoadFatBinary");
  GET(ModuleUnload, "cuModuleUnload");
  GET(ModuleGetFunction, "cuModuleGetFunction");
  GET(LibraryLoadData, "cuLibraryLoadData");
  GET(LibraryUnload, "cuLibraryUnload");
  GET(LaunchKernel, "cuLaunchKernel");
  GET(GraphGetNodes, "cuGraphGetNodes");
  GET(GraphKernelNodeGetParams, "cuGraphKernelNodeGetParams");
  GET(FuncGetName, "cuFuncGetName");
  GET(DeviceGetCount, "cuDeviceGetCount");
  /* Graph inspection only reads the result, whatever the route: cuFuncGetName
   * is newer (12.3) than the version the probe asks cuGetProcAddress for. */
  if (!cu.FuncGetName)
    cu.FuncGetName = (__typeof__(cu.FuncGetName))dlsym(libcuda, "cuFuncGetName");
  /* Not wrapped by capguard, so one route is enough: the _v4 prototype. */
  cu.CtxCreate = (__typeof__(cu.CtxCreate))dlsym(libcuda, "cuCtxCreate_v4");
}
#endif

/* Which object a pointer lies in, for the "untouched entry points are the
 * driver's own pointer" check. */
static const char *owner(void *p) {
  Dl_info info;
  if (!p || !dladdr(p, &info) || !info.dli_fname)
    return "none";
  const char *slash = strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

static CUmodule loaded;

static void do_op(void) {
  for (int i = 0; i < opt.repeat; i++) {
    CUlibrary lib;
    if (!strcmp(opt.op, "load"))
      op_result = cu.ModuleLoadData(&loaded, image);
    else if (!strcmp(opt.op, "loadex"))
      op_result = cu.ModuleLoadDataEx(&loaded, image, 0, NULL, NULL);
    else if (!strcmp(opt.op, "fatbin"))
      op_result = cu.ModuleLoadFatBinary(&loaded, image);
    else if (!strcmp(opt.op, "file"))
      op_result = cu.ModuleLoad(&loaded, opt.image_path);
    else if (!strcmp(opt.op, "library"))
      op_result = cu.LibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
    else if (!strcmp(opt.op, "unload"))
      op_result = cu.ModuleUnload(warm_module);
    else if (!strcmp(opt.op, "libunload"))
      op_result = cu.LibraryUnload(warm_library);
    else if (!strcmp(opt.op, "none"))
      op_result = CUDA_SUCCESS;
    else
      die("unknown --op");
  }
}

/* The op on the calling thread, switched to relaxed mode around it with --swap
 * (the ground truth's "+swap" columns). */
static void do_op_in_mode(void) {
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (opt.swap)
    cu.ExchangeMode(&m);
  do_op();
  if (opt.swap)
    cu.ExchangeMode(&m);
}

static void *other_thread(void *arg) {
  (void)arg;
  cu.CtxSetCurrent(ctx);
  do_op_in_mode();
  return NULL;
}

/* --second: another thread's capture, begun and ended when main says. */
static pthread_mutex_t second_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t second_cond = PTHREAD_COND_INITIALIZER;
static int second_stage; /* 1: begun, 2: main asks it to end, 3: ended */
static CUresult second_begin_result = -1, second_end_result = -1;

static void second_set(int stage) {
  pthread_mutex_lock(&second_lock);
  second_stage = stage;
  pthread_cond_broadcast(&second_cond);
  pthread_mutex_unlock(&second_lock);
}
static void second_wait(int stage) {
  pthread_mutex_lock(&second_lock);
  while (second_stage < stage)
    pthread_cond_wait(&second_cond, &second_lock);
  pthread_mutex_unlock(&second_lock);
}

static void *second_thread(void *arg) {
  (void)arg;
  CUcontext c2;
  CUstream s2;
  if (opt.second_ctx ? (!cu.CtxCreate || cu.CtxCreate(&c2, NULL, 0, dev)) : cu.CtxSetCurrent(ctx))
    die("second thread: no context");
  if (cu.StreamCreate(&s2, CU_STREAM_NON_BLOCKING))
    die("second thread: no stream");
  second_begin_result = cu.BeginCapture(s2, opt.second_mode);
  second_set(1);
  second_wait(2);
  CUgraph g = NULL;
  second_end_result = cu.EndCapture(s2, &g); /* non-relaxed captures end on their own thread */
  second_set(3);
  return NULL;
}

static pthread_t second_tid;
static void second_start(void) {
  pthread_create(&second_tid, NULL, second_thread, NULL);
  second_wait(1);
  printf("second_begin_result=%d\n", (int)second_begin_result);
}
static void second_finish(void) {
  second_set(2);
  second_wait(3);
  pthread_join(second_tid, NULL);
  printf("second_end_result=%d\n", (int)second_end_result);
}

static CUstreamCaptureMode parse_mode(const char *m) {
  return !strcmp(m, "global") ? CU_STREAM_CAPTURE_MODE_GLOBAL
         : !strcmp(m, "thread-local") ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                                      : CU_STREAM_CAPTURE_MODE_RELAXED;
}

static void print_graph_kernels(CUgraph g) {
  size_t n = 0;
  printf("graph_kernels=");
  if (g && cu.GraphGetNodes(g, NULL, &n) == CUDA_SUCCESS && n) {
    CUgraphNode *nodes = calloc(n, sizeof *nodes);
    cu.GraphGetNodes(g, nodes, &n);
    for (size_t i = 0; i < n; i++) {
      CUDA_KERNEL_NODE_PARAMS p;
      const char *name = NULL;
      if (cu.GraphKernelNodeGetParams(nodes[i], &p) == CUDA_SUCCESS && cu.FuncGetName(&name, p.func) == CUDA_SUCCESS)
        printf("%s%s", i ? "," : "", name);
    }
    free(nodes);
  }
  printf("\n");
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--route") && v) opt.route = argv[++i];
    else if (!strcmp(a, "--op") && v) opt.op = argv[++i];
    else if (!strcmp(a, "--image") && v) opt.image_path = argv[++i];
    else if (!strcmp(a, "--launch") && v) opt.launch = argv[++i];
    else if (!strcmp(a, "--thread") && v) opt.other_thread = !strcmp(argv[++i], "other");
    else if (!strcmp(a, "--swap")) opt.swap = 1;
    else if (!strcmp(a, "--repeat") && v) opt.repeat = atoi(argv[++i]);
    else if (!strcmp(a, "--proc-version") && v) opt.proc_version = atoi(argv[++i]);
    else if (!strcmp(a, "--proc-flags") && v) opt.proc_flags = atoi(argv[++i]);
    else if (!strcmp(a, "--v1")) opt.v1 = 1;
    else if (!strcmp(a, "--mode") && v) opt.mode = parse_mode(argv[++i]);
    else if (!strcmp(a, "--unload-loaded") && v) opt.unload_loaded = argv[++i];
    else if (!strcmp(a, "--no-end")) opt.no_end = 1;
    else if (!strcmp(a, "--print-mode")) opt.print_mode = 1;
    else if (!strcmp(a, "--second") && v) { opt.second = 1; opt.second_mode = parse_mode(argv[++i]); }
    else if (!strcmp(a, "--second-ctx")) opt.second_ctx = 1;
    else if (!strcmp(a, "--guard-image")) opt.guard_image = 1;
    else if (!strcmp(a, "--second-begin") && v) opt.second_begin = argv[++i];
    else if (!strcmp(a, "--second-end") && v) opt.second_end = argv[++i];
    else
      die("usage: route_probe --route direct|dlsym|procaddr --op OP --image FILE [--mode M] [--thread same|other] [--swap]");
  }
  if (opt.image_path)
  {
    size_t size;
    if (!(image = cg_read_file(opt.image_path, (size_t)1 << 30, &size)))
      die("cannot read --image");
    if (opt.guard_image) {
      size--; /* cg_read_file's own NUL is not the file's */
      size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (size + page - 1) / page * page + page;
      unsigned char *m = mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED || mprotect(m + body, page, PROT_NONE))
        die("cannot map the guarded image");
      memcpy(m + body - size, image, size);
      free(image);
      image = m + body - size;
    }
  }
  bind_api();
  printf("wrapped_owner=%s\n", owner((void *)cu.ModuleLoadData));
  printf("unwrapped_owner=%s\n", owner((void *)cu.DeviceGetCount));
  CUstream s;
  if (cu.Init(0) || cu.DeviceGet(&dev, 0) || cu.DevicePrimaryCtxRetain(&ctx, dev) || cu.CtxSetCurrent(ctx) ||
      cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING))
    die("driver set-up failed");
  if (!strcmp(opt.op, "unload") && (!image || cu.ModuleLoadData(&warm_module, image)))
    die("cannot load the module to unload");
  if (!strcmp(opt.op, "libunload") &&
      (!image || cu.LibraryLoadData(&warm_library, image, NULL, NULL, 0, NULL, NULL, 0)))
    die("cannot load the library to unload");
  if (opt.second && !strcmp(opt.second_begin, "before"))
    second_start();

  CUresult begin = (opt.v1 || !cu.BeginCapture) ? cu.BeginCaptureV1(s) : cu.BeginCapture(s, opt.mode);
  printf("begin_result=%d\n", (int)begin);
  if (opt.second && strcmp(opt.second_begin, "before"))
    second_start();
  if (opt.other_thread) {
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
  } else {
    do_op_in_mode();
  }
  printf("op_result=%d\n", (int)op_result);
  if (opt.launch && op_result == CUDA_SUCCESS) {
    CUfunction f;
    CUresult r = cu.ModuleGetFunction(&f, loaded, opt.launch);
    if (r == CUDA_SUCCESS)
      r = cu.LaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
    printf("launch_result=%d\n", (int)r);
  }
  if (opt.print_mode) {
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult r = cu.ExchangeMode(&m);
    printf("thread_mode_after=%d\n", r == CUDA_SUCCESS ? (int)m : -1);
    cu.ExchangeMode(&m);
  }
  if (opt.unload_loaded && !strcmp(opt.unload_loaded, "in"))
    printf("unload_loaded_result=%d\n", (int)cu.ModuleUnload(loaded));
  if (opt.second && !strcmp(opt.second_end, "before"))
    second_finish();
  if (opt.no_end) {
    fflush(stdout);
    return 0; /* exit with the capture still open */
  }
  CUgraph g = NULL;
  CUresult end = cu.EndCapture(s, &g);
  printf("end_result=%d\n", (int)end);
  print_graph_kernels(g);
  if (opt.second && strcmp(opt.second_end, "before"))
    second_finish();
  if (opt.unload_loaded && !strcmp(opt.unload_loaded, "after"))
    printf("unload_loaded_result=%d\n", (int)cu.ModuleUnload(loaded));
  return 0;
}
