/* The real driver: found lazily, the first time a wrapped entry point is used
 * or a driver symbol is looked up, never at start-up (a process that never
 * touches CUDA never loads libcuda because of capguard). */
#ifndef CAPGUARD_DRIVER_H
#define CAPGUARD_DRIVER_H

#include <cuda.h>
#include <stdbool.h>

/* Driver entry points capguard calls for itself; all of them are allowed
 * during capture (driver-semantics.md): capguard never calls a
 * capture-unsafe function on its own behalf. */
typedef struct {
  CUresult (*DriverGetVersion)(int *);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxGetDevice)(CUdevice *);
  CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*GraphDestroy)(CUgraph);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*LibraryGetModule)(CUmodule *, CUlibrary);
  /* the first version's three parameters (status, id): every driver since
   * CUDA 10.1 exports it, and torch's cudart asks for it */
  CUresult (*StreamGetCaptureInfo)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
  CUresult (*StreamGetFlags)(CUstream, unsigned int *);
  CUresult (*PointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
  /* several attributes in one call (the stale check's walk: start, size and
   * buffer id of an allocation); a pointer the driver does not know gets
   * zeros and CUDA_SUCCESS, as documented */
  CUresult (*PointerGetAttributes)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
  /* The stale-pointer check's graph walk (decide/stale/stale_walk.c): queries of a
   * graph and of a function, none of them stream work. NULL where the
   * driver lacks them: cuGraphKernelNodeGetParams_v2 is 12.0+,
   * cuFuncGetName 12.3+, cuFuncGetParamInfo 12.4+. */
  CUresult (*GraphGetNodes)(CUgraph, CUgraphNode *, size_t *);
  CUresult (*GraphNodeGetType)(CUgraphNode, CUgraphNodeType *);
  CUresult (*GraphKernelNodeGetParams)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
  CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *);
  CUresult (*FuncGetName)(const char **, CUfunction);
  CUresult (*FuncGetModule)(CUmodule *, CUfunction); /* 11.0+: before 12.4, the way to a kernel's image */
  /* a node launched with a CUkernel (12.4+, 12.3+) */
  CUresult (*KernelGetParamInfo)(CUkernel, size_t, size_t *, size_t *);
  CUresult (*KernelGetName)(const char **, CUkernel);
  CUresult (*GraphMemcpyNodeGetParams)(CUgraphNode, CUDA_MEMCPY3D *);
  CUresult (*GraphMemsetNodeGetParams)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *);
  /* Only inside the program's own cuDevicePrimaryCtxReset / Release (which
   * no capture survives anyway): which handle the primary context has, and
   * whether the release ended it (decide/guard/context_end.c). */
  CUresult (*DevicePrimaryCtxGetState)(CUdevice, unsigned int *, int *);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  /* The hang watch's completion markers (decide/hang/hang_launches.c): events
   * made while nothing captures, and the watcher thread's own context. */
  CUresult (*EventCreate)(CUevent *, unsigned int);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*GraphChildGraphNodeGetGraph)(CUgraphNode, CUgraph *); /* a child graph's kernels counted too */
} cg_driver_calls;

extern cg_driver_calls cg_drv;

/* True once the driver's pointers are known. Loads libcuda.so.1 if it is not
 * loaded yet (only called when the process is already calling the driver). */
bool cg_driver_ready(void);
/* True once cg_driver_ready() has found the driver (loads and calls nothing). */
bool cg_driver_resolved(void);
/* Fork: the resolve lock starts released in the child, and a resolve another
 * thread of the parent was making is made again (that thread is gone). */
void cg_driver_atfork_prepare(void); /* waits for a resolve in flight (its dlopens) */
void cg_driver_atfork_parent(void);
void cg_driver_atfork_child(void);
/* True if libcuda.so.1 is already loaded in this process (loads nothing). */
bool cg_driver_loaded(void);
/* cuDriverGetVersion, 0 if unknown. */
int cg_driver_version(void);
/* Whether the real driver itself refuses module loads while a capture
 * prohibits the thread (before CUDA 12.3; also when the version is unknown). */
bool cg_driver_rules_loads(void);
/* The version whose rules apply: CAPGUARD_EMULATE_DRIVER if set, else the driver's. */
int cg_effective_driver_version(void);

/* The driver's log callback to register at the first driver use (drivers
 * 12.9 and later; decide/report/driver_log_callback.c's, set by init.c before any driver
 * use): a pointer handed down, so that this floor calls nothing above it. */
void cg_driver_set_log_callback(CUlogsCallback cb);
/* What runs once, when the driver is first found and before any wrapper
 * sees its pointer (init.c hands it over: no floor calls up): what a
 * process that never uses CUDA should not pay for at start-up. */
void cg_driver_set_first_use(void (*fn)(void));
/* Whether graph launches must reach their C body (the fleet watches them:
 * capture_time.h's cg_launch_watch): their x86-64 fast path jumps there
 * instead of testing the watch at every launch. */
void cg_driver_launch_watch(bool on);

/* The wrapper for a pointer the driver handed out (cuGetProcAddress, dlsym),
 * found by comparing it with the driver's own exported pointers; p itself if
 * capguard does not wrap it. */
void *cg_wrap_pointer(void *p);

#endif
