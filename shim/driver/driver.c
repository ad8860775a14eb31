#include "driver.h"
#include "breaker_targets.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "entry_points.h"
#include "output.h"
#include "warn.h"
#include "real_dlsym.h"
#include "locks.h"
#include "thread_id.h"

cg_driver_calls cg_drv;
void *cg_ep_real[CG_EP_COUNT];

enum { DRV_UNKNOWN, DRV_RESOLVING, DRV_READY, DRV_ABSENT };
static int drv_state = DRV_UNKNOWN;
static pid_t resolving_tid;
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static int driver_version;

static const char libcuda_name[] = "libcuda.so.1";

bool cg_driver_resolved(void) { return __atomic_load_n(&drv_state, __ATOMIC_ACQUIRE) == DRV_READY; }

/* A fork waits for a resolve in flight: it dlopens libcuda and, at the first
 * use, libgcc_s (the unwinder), and a child forked while another thread is
 * inside dlopen inherits the loader's state half-changed, so its own first
 * dlopen fails ld.so's consistency assertion and kills it (seen 1 child in
 * 2,000 forked beside capturing threads). A fork from inside the resolve
 * itself (libcuda's constructors) does not wait for its own thread. */
static bool held_for_fork;
void cg_driver_atfork_prepare(void) {
  if (__atomic_load_n(&drv_state, __ATOMIC_ACQUIRE) == DRV_RESOLVING &&
      __atomic_load_n(&resolving_tid, __ATOMIC_RELAXED) == cg_thread_id())
    return;
  cg_lock(&resolve_lock);
  held_for_fork = true;
}
void cg_driver_atfork_parent(void) {
  if (held_for_fork) {
    held_for_fork = false;
    cg_unlock(&resolve_lock);
  }
}

void cg_driver_atfork_child(void) {
  held_for_fork = false;
  pthread_mutex_init(&resolve_lock, NULL);
  int resolving = DRV_RESOLVING;
  __atomic_compare_exchange_n(&drv_state, &resolving, DRV_UNKNOWN, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

bool cg_driver_loaded(void) {
  if (__atomic_load_n(&drv_state, __ATOMIC_ACQUIRE) == DRV_READY)
    return true;
  void *h = dlopen(libcuda_name, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) {
    (void)dlerror(); /* capguard's question is not the caller's error (its dlsym may succeed) */
    return false;
  }
  dlclose(h);
  return true;
}

static void *sym(void *h, const char *name) { return h ? cg_real_dlsym(h, name) : NULL; }

/* The driver's log (drivers 12.9 and later) names every call it refuses,
 * wrapped or not (decide/report/driver_log_callback.c, handed over by init.c: no floor calls
 * up). Registered once, here, at the first driver
 * use: a call allowed at any time, capture or not. The program's own
 * callbacks are the driver's to call: they keep receiving everything. */
static CUlogsCallback log_callback;
void cg_driver_set_log_callback(CUlogsCallback cb) { log_callback = cb; }

static void (*first_use)(void);
void cg_driver_set_first_use(void (*fn)(void)) { first_use = fn; }

static void register_log_callback(void *h, int version) {
  if (version < 12090 || cg_cfg.mode == CG_RUN_OFF || !log_callback)
    return;
  CUresult (*reg)(CUlogsCallback, void *, CUlogsCallbackHandle *) =
      (CUresult(*)(CUlogsCallback, void *, CUlogsCallbackHandle *))sym(h, "cuLogsRegisterCallback");
  CUlogsCallbackHandle handle;
  if (reg && reg(log_callback, NULL, &handle) != CUDA_SUCCESS)
    cg_warn("the driver's log callback could not be registered; calls capguard does not wrap will "
            "not be named");
}

/* The x86-64 fast paths' targets (route/fast_path.h): the driver's
 * function where it has one, after cg_ep_real, so that a wrapper that jumps
 * to the driver finds everything ready, as one that loads its pointer does.
 * The section's bounds are weak: no fast path writes one elsewhere. */
typedef struct {
  uint32_t ep_offset;
  int32_t target, other; /* from the field itself: no relocation at load (the C body's address) */
} fast_target;
static void **target_of(const fast_target *t) { return (void **)((const char *)&t->target + t->target); }
static void *other_of(const fast_target *t) { return (void *)((const char *)&t->other + t->other); }
extern const fast_target __start_cg_fast_targets[] __attribute__((weak, visibility("hidden")));
extern const fast_target __stop_cg_fast_targets[] __attribute__((weak, visibility("hidden")));

static bool is_graph_launch(const fast_target *t) {
  size_t ep = t->ep_offset / sizeof(void *);
  return ep == CG_EP_cuGraphLaunch || ep == CG_EP_cuGraphLaunch_ptsz;
}

/* The graph launches' targets: their C body while the fleet watches
 * launches (cg_driver_launch_watch), else the driver's function once
 * found. Every writer looks at the watch again after its stores and
 * stores again if it changed meanwhile, so the last stores agree with it. */
static bool launches_watched;
static void retarget_launches(void) {
  bool w;
  do {
    w = __atomic_load_n(&launches_watched, __ATOMIC_ACQUIRE);
    for (const fast_target *t = __start_cg_fast_targets; t && t < __stop_cg_fast_targets; t++) {
      void *real = __atomic_load_n(&cg_ep_real[t->ep_offset / sizeof(void *)], __ATOMIC_ACQUIRE);
      if (is_graph_launch(t))
        __atomic_store_n(target_of(t), w || !real ? other_of(t) : real, __ATOMIC_RELEASE);
    }
  } while (__atomic_load_n(&launches_watched, __ATOMIC_ACQUIRE) != w);
}

void cg_driver_launch_watch(bool on) {
  __atomic_store_n(&launches_watched, on, __ATOMIC_RELEASE);
  retarget_launches();
}

static void publish_fast_targets(void) {
  for (const fast_target *t = __start_cg_fast_targets; t && t < __stop_cg_fast_targets; t++) {
    void *real = cg_ep_real[t->ep_offset / sizeof(void *)];
    if (real && !is_graph_launch(t))
      __atomic_store_n(target_of(t), real, __ATOMIC_RELEASE);
  }
  retarget_launches();
}

static void resolve(void) {
  if (cg_real_dlsym_resolve()) {
    cg_warn("glibc's dlsym not found; passing every call through untouched");
    __atomic_store_n(&drv_state, DRV_ABSENT, __ATOMIC_RELEASE);
    return;
  }
  void *h = dlopen(libcuda_name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h)
    h = dlopen(libcuda_name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    (void)dlerror(); /* not the caller's error */
    __atomic_store_n(&drv_state, DRV_ABSENT, __ATOMIC_RELEASE);
    return;
  }
  void *real[CG_EP_COUNT];
  for (int i = 0; i < CG_EP_COUNT; i++)
    real[i] = sym(h, cg_ep_name((cg_entry_point)i));
  cg_drv.DriverGetVersion = (CUresult(*)(int *))sym(h, "cuDriverGetVersion");
  cg_drv.CtxGetCurrent = (CUresult(*)(CUcontext *))sym(h, "cuCtxGetCurrent");
  cg_drv.CtxGetDevice = (CUresult(*)(CUdevice *))sym(h, "cuCtxGetDevice");
  cg_drv.DeviceGetAttribute = (CUresult(*)(int *, CUdevice_attribute, CUdevice))sym(h, "cuDeviceGetAttribute");
  cg_drv.GraphDestroy = (CUresult(*)(CUgraph))sym(h, "cuGraphDestroy");
  cg_drv.ModuleGetFunction = (CUresult(*)(CUfunction *, CUmodule, const char *))sym(h, "cuModuleGetFunction");
  cg_drv.LibraryGetModule = (CUresult(*)(CUmodule *, CUlibrary))sym(h, "cuLibraryGetModule");
  cg_drv.StreamGetCaptureInfo =
      (CUresult(*)(CUstream, CUstreamCaptureStatus *, cuuint64_t *))sym(h, "cuStreamGetCaptureInfo");
  cg_drv.StreamGetFlags = (CUresult(*)(CUstream, unsigned int *))sym(h, "cuStreamGetFlags");
  cg_drv.PointerGetAttribute =
      (CUresult(*)(void *, CUpointer_attribute, CUdeviceptr))sym(h, "cuPointerGetAttribute");
  cg_drv.PointerGetAttributes = (CUresult(*)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr))sym(
      h, "cuPointerGetAttributes");
  cg_drv.GraphGetNodes = (CUresult(*)(CUgraph, CUgraphNode *, size_t *))sym(h, "cuGraphGetNodes");
  cg_drv.GraphNodeGetType = (CUresult(*)(CUgraphNode, CUgraphNodeType *))sym(h, "cuGraphNodeGetType");
  cg_drv.GraphKernelNodeGetParams =
      (CUresult(*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *))sym(h, "cuGraphKernelNodeGetParams_v2");
  cg_drv.FuncGetParamInfo = (CUresult(*)(CUfunction, size_t, size_t *, size_t *))sym(h, "cuFuncGetParamInfo");
  cg_drv.FuncGetName = (CUresult(*)(const char **, CUfunction))sym(h, "cuFuncGetName");
  cg_drv.FuncGetModule = (CUresult(*)(CUmodule *, CUfunction))sym(h, "cuFuncGetModule");
  cg_drv.KernelGetParamInfo = (CUresult(*)(CUkernel, size_t, size_t *, size_t *))sym(h, "cuKernelGetParamInfo");
  cg_drv.KernelGetName = (CUresult(*)(const char **, CUkernel))sym(h, "cuKernelGetName");
  cg_drv.GraphMemcpyNodeGetParams = (CUresult(*)(CUgraphNode, CUDA_MEMCPY3D *))sym(h, "cuGraphMemcpyNodeGetParams");
  cg_drv.GraphMemsetNodeGetParams =
      (CUresult(*)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *))sym(h, "cuGraphMemsetNodeGetParams");
  cg_drv.DevicePrimaryCtxGetState =
      (CUresult(*)(CUdevice, unsigned int *, int *))sym(h, "cuDevicePrimaryCtxGetState");
  cg_drv.DevicePrimaryCtxRetain = (CUresult(*)(CUcontext *, CUdevice))sym(h, "cuDevicePrimaryCtxRetain");
  cg_drv.DevicePrimaryCtxRelease = (CUresult(*)(CUdevice))sym(h, "cuDevicePrimaryCtxRelease_v2");
  cg_drv.EventCreate = (CUresult(*)(CUevent *, unsigned int))sym(h, "cuEventCreate");
  cg_drv.CtxSetCurrent = (CUresult(*)(CUcontext))sym(h, "cuCtxSetCurrent");
  cg_drv.GraphChildGraphNodeGetGraph = (CUresult(*)(CUgraphNode, CUgraph *))sym(h, "cuGraphChildGraphNodeGetGraph");
  int v = 0;
  if (cg_drv.DriverGetVersion && cg_drv.DriverGetVersion(&v) != CUDA_SUCCESS)
    v = 0;
  driver_version = v;
  /* Emulation only refuses what an older driver refuses: a newer version
   * would change nothing, and nothing would say so. Once: resolve runs once
   * a process; under capguard run, whose summary says it once for the run
   * (from the process records), not at all. */
  if (cg_cfg.emulate_driver && v > 0 && cg_cfg.emulate_driver > v && !(cg_cfg.run_id && cg_cfg.log_path))
    cg_warn("CAPGUARD_EMULATE_DRIVER=%d is newer than this driver (%d): capguard can refuse what "
            "an older driver refuses, not allow what this one refuses; it emulates nothing",
            cg_cfg.emulate_driver, v);
  if (first_use)
    first_use();
  __atomic_store_n(&drv_state, DRV_READY, __ATOMIC_RELEASE);
  /* Published last: a wrapper that sees its pointer (its one load) finds
   * everything above done (wrapper.h). */
  /* Before the pointers: a breaker's fast path runs only in a thread that
   * holds a slot of the breakers' fence, claimed after a pointer was seen
   * (breaker_targets.h). */
  cg_breaker_targets_publish(real);
  for (int i = 0; i < CG_EP_COUNT; i++)
    __atomic_store_n(&cg_ep_real[i], real[i], __ATOMIC_RELEASE);
  publish_fast_targets();
  cg_output_process(v);
  register_log_callback(h, v);
}

bool cg_driver_ready(void) {
  int s = __atomic_load_n(&drv_state, __ATOMIC_ACQUIRE);
  if (s == DRV_READY)
    return true;
  if (s == DRV_ABSENT)
    return false;
  /* dlopen may run libcuda's constructors, which could call back into a
   * wrapper on this very thread: that nested call must not wait for itself. */
  if (s == DRV_RESOLVING && __atomic_load_n(&resolving_tid, __ATOMIC_RELAXED) == cg_thread_id())
    return false;
  cg_lock(&resolve_lock);
  if (__atomic_load_n(&drv_state, __ATOMIC_ACQUIRE) == DRV_UNKNOWN) {
    __atomic_store_n(&resolving_tid, cg_thread_id(), __ATOMIC_RELAXED);
    __atomic_store_n(&drv_state, DRV_RESOLVING, __ATOMIC_RELEASE);
    resolve();
  }
  cg_unlock(&resolve_lock);
  return __atomic_load_n(&drv_state, __ATOMIC_ACQUIRE) == DRV_READY;
}

int cg_driver_version(void) { return cg_driver_ready() ? driver_version : 0; }

bool cg_driver_rules_loads(void) {
  int v = cg_driver_version();
  return v <= 0 || v < 12030;
}

int cg_effective_driver_version(void) {
  return cg_cfg.emulate_driver ? cg_cfg.emulate_driver : cg_driver_version();
}

void *cg_wrap_pointer(void *p) {
  if (!p || cg_cfg.mode == CG_RUN_OFF || !cg_driver_ready())
    return p;
  for (int i = 0; i < CG_EP_COUNT; i++)
    if (cg_ep_real[i] == p)
      return cg_ep_wrapper((cg_entry_point)i);
  return p;
}
