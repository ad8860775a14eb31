/* fakecuda: shared state of the stand-in libcuda.so.1 (internal to tests/fakecuda).
 *
 * The fake is an independent model of the driver's stream-capture rules, written from
 * the measured table docs/driver-semantics.md, so that it can
 * cross-check capguard's own model in detect/. It deliberately shares no code
 * with detect/.
 *
 * Every entry point runs under one process-wide mutex (FC_BEGIN / FC_END): the fake
 * is for tests, simplicity beats concurrency. Handles are pointers to small structs
 * that start with struct fc_handle; every handle ever returned is kept in a registry
 * so that a stale or made-up handle is answered with an error, never dereferenced.
 */
#ifndef FAKECUDA_INTERNAL_H
#define FAKECUDA_INTERNAL_H

/* Un-macro'd entry-point names and the legacy prototypes (cuStreamBeginCapture without a
 * mode, cuGetProcAddress with four arguments), as NVIDIA's own build of libcuda sees them. */
#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uthash.h>

#define FC_EXPORT __attribute__((visibility("default")))

/* ---- handle registry (fake_registry.c) -------------------------------------------- */
enum fc_kind {
  FC_CTX = 1, FC_STREAM, FC_EVENT, FC_MODULE, FC_FUNCTION, FC_LIBRARY, FC_KERNEL,
  FC_GRAPH, FC_NODE, FC_EXEC, FC_ALLOC, FC_ARRAY
};

struct fc_handle {
  const void *key;   /* the value handed to the caller (object address, or memory address) */
  int kind;
  int alive;         /* 0: unloaded tombstone, kept so its address is never reused */
  UT_hash_handle hh;
};

void fc_register(struct fc_handle *h, const void *key, int kind);
/* The live handle of this kind registered under key, or NULL. */
struct fc_handle *fc_lookup(const void *key, int kind);
/* A handle of this kind registered under key, dead or alive (NULL if never registered). */
struct fc_handle *fc_lookup_any(const void *key, int kind);
void fc_unregister(struct fc_handle *h);
/* Calls fn on every registered handle of this kind (fn must not unregister). */
void fc_foreach(int kind, void (*fn)(struct fc_handle *h, void *arg), void *arg);

/* ---- environment (fake_env.c) ------------------------------------------------------- */
int fc_env_driver_version(void);   /* FAKECUDA_DRIVER_VERSION, default 13000 */
int fc_env_sm(void);               /* FAKECUDA_SM, default 90 */

/* ---- call bracket and tracing (fake_call.c) ----------------------------------------- */
/* FC_TRACE_CAPS: how many open captures a trace line's capture fields follow
 * (FAKECUDA_TRACE_CAPTURES); past it, a call's opened/closed/broke are not said. */
#define FC_TRACE_CAPS 16
struct fc_call {
  int captures_at_entry;
  int prohibited_at_entry;
  /* FAKECUDA_TRACE_CAPTURES: the open captures when the call arrived, and
   * which of them were active, for the line's opened=, closed= and broke=. */
  int n_caps;
  uint64_t cap_id[FC_TRACE_CAPS];
  int cap_active[FC_TRACE_CAPS];
  unsigned cap_hits[FC_TRACE_CAPS];
};
struct fc_call fc_enter(void);
CUresult fc_leave(const struct fc_call *c, const char *name, CUresult rc);
#define FC_BEGIN struct fc_call fc_call_ = fc_enter()
#define FC_END(rc) return fc_leave(&fc_call_, __func__, (rc))

pid_t fc_tid(void);

/* ---- process state (fake_device.c) -------------------------------------------------- */
struct fc_ctx {
  struct fc_handle h;
  int primary;
  int refcount;
  int active;   /* primary: retained since its last reset (cuDevicePrimaryCtxGetState) */
};
/* Unloads every module loaded in ctx (fake_module.c): it is destroyed or reset.
 * Libraries are context-independent and stay. */
struct fc_ctx;
void fc_modules_die_with(struct fc_ctx *ctx);
extern int fc_initialized;
/* CUDA_SUCCESS when cuInit ran and the calling thread has a live current context. */
CUresult fc_need_ctx(void);
/* FAKECUDA_SYNC_BLOCK_MS: a synchronize's wait before it runs (fake_sync_block.c). */
void fc_sync_block(void);
/* FAKECUDA_QUERY_DELAY_US: a cuEventQuery's wait before it looks (fake_sync_block.c). */
void fc_query_delay(void);
/* FAKECUDA_LAUNCH_HOLD_MS (fake_sync_block.c): a graph launch on stream holds
 * it; an event recorded there after it is held as long; fc_held says whether
 * a stream or event is held now, fc_hold_wait waits for it (NULL: for
 * every stream: a context's synchronize). No fake lock is taken. */
void fc_launch_hold(const void *stream);
void fc_hold_recorded(const void *event, const void *stream);
int fc_held(const void *key);
void fc_hold_wait(const void *key);
CUresult fc_need_init(void);
struct fc_ctx *fc_current_ctx(void);
/* The context a CUcontext argument names: the current one for NULL; NULL if invalid. */
struct fc_ctx *fc_ctx_resolve(CUcontext ctx);

/* ---- memory (fake_memory.c) --------------------------------------------------------- */
enum fc_mem_kind { FC_MEM_DEVICE = 0, FC_MEM_HOST, FC_MEM_REGISTERED };
/* Allocates zeroed host memory standing in for the kind asked (not FC_MEM_REGISTERED). */
CUresult fc_mem_alloc(void **out, size_t size, enum fc_mem_kind kind);
/* Device memory below 4 GiB, for the 32-bit v1 entry points (cuMemAlloc). */
CUresult fc_mem_alloc_low(void **out, size_t size);
/* The device address d when [d, d + n) lies in one live allocation, else NULL. */
void *fc_mem_span(CUdeviceptr d, size_t n);
/* Registers caller-owned memory [p, p + size) (cuMemHostRegister). */
CUresult fc_mem_register(void *p, size_t size);
/* Frees (or unregisters) the allocation starting at p; INVALID_VALUE if p is not the start
 * of a live allocation of that kind. */
CUresult fc_mem_release(const void *p, enum fc_mem_kind kind);
/* The virtual memory API (fake_vmm.c): whether p lies in a reserved range (its start,
 * size and buffer id filled), and whether [p, p + n) is mapped throughout. */
int fc_vmm_reserved(uintptr_t p, uintptr_t *start, size_t *size, unsigned long long *buffer_id);
int fc_vmm_mapped(uintptr_t p, size_t n);

/* ---- graphs (fake_graph.c) ---------------------------------------------------------- */
struct fc_function;
struct fc_node {
  struct fc_handle h;
  struct fc_graph *graph;
  CUgraphNodeType type;
  struct fc_function *fn;                 /* kernel nodes */
  CUhostFn host_fn;                       /* host nodes */
  void *host_data;
  unsigned grid[3], block[3], shmem;
  /* kernel nodes: the launch's parameters as captured (fake_params.c), NULL when the
   * function's layout is unknown; param_ptrs[i] points into param_bytes */
  unsigned char *param_bytes;
  void **param_ptrs;
  size_t n_params;
  /* kernel nodes launched with `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER): a copy of the
   * buffer, handed back as an `extra` array of its own (fake_params.c) */
  unsigned char *extra_bytes;
  size_t extra_size;
  void *extra_arr[5];
  /* linear memcpy and memset nodes: their addresses as captured (fake_copies.c);
   * 2D/3D copies keep none */
  const void *copy_dst, *copy_src;
  size_t copy_bytes;
  unsigned set_value, set_elem;
  size_t set_pitch, set_w, set_h;
};
struct fc_graph {
  struct fc_handle h;
  struct fc_node **nodes;
  size_t n, cap;
  int capturing;                          /* a capture is adding to it */
};
struct fc_graph *fc_graph_new(void);
void fc_graph_free(struct fc_graph *g);
struct fc_node *fc_graph_add(struct fc_graph *g, CUgraphNodeType type);

/* ---- streams and captures (fake_capture.c) ------------------------------------------ */
struct fc_capture {
  uint64_t id;
  CUstreamCaptureMode mode;
  pid_t owner;                             /* thread that began the capture */
  struct fc_ctx *ctx;                      /* context current when it began */
  int invalidated;
  unsigned hits;                           /* calls that invalidated it, the first and any after (trace) */
  struct fc_graph *graph;
  int graph_external;                      /* cuStreamBeginCaptureToGraph: caller owns it */
  struct fc_node *last;                    /* the capture's current dependency */
  struct fc_stream *stream;
  struct fc_capture *next;                 /* list of open captures */
};
struct fc_stream {
  struct fc_handle h;
  unsigned flags;
  int special;                             /* 1: legacy NULL stream, 2: per-thread stream */
  struct fc_capture *cap;                  /* open capture (active or invalidated); a stream
                                              forked into a capture points at it too */
  /* fake_fork.c: a forked stream's work since it was last joined back */
  int unjoined;
  uint64_t gen;                            /* bumped by every piece of work on it */
  pid_t destroyed_owner;                   /* destroyed while capturing: who began that capture */
};
/* The stream a handle names; ptsz says how the NULL handle is read. NULL if invalid. */
struct fc_stream *fc_stream_resolve(CUstream s, int ptsz);
/* The same for a call that needs a current context first: CUDA_ERROR_INVALID_CONTEXT
 * without one, CUDA_ERROR_INVALID_HANDLE for a bad handle, else *st. */
CUresult fc_stream_in_ctx(CUstream s, int ptsz, struct fc_stream **st);
int fc_open_captures(void);
/* A call invalidates c (counted, for FAKECUDA_TRACE_CAPTURES's hit=). */
void fc_invalidate(struct fc_capture *c);
/* Whether an open capture prohibits the calling thread (the rule, nothing invalidated). */
int fc_prohibited(void);
/* If the calling thread is prohibited (capture-interaction rule), invalidates every
 * capture that prohibits it and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult fc_refuse_if_prohibited(void);
/* If a capture of ctx is open, invalidates every open capture of ctx and returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, whatever the calling thread's mode. */
CUresult fc_refuse_in_ctx(struct fc_ctx *ctx);
/* The open capture (active or invalidated) with this id, or NULL. */
struct fc_capture *fc_capture_find(uint64_t id);
void fc_capture_close(struct fc_capture *c, int discard_graph);
/* Ends the driver refuses or makes, and destroyed capturing streams (fake_ends.c).
 * The end of capture c as measured: *done = 1 and the result when the end is one of
 * those (c is closed), *done = 0 for an ordinary end. */
CUresult fc_end_refused_or_made(struct fc_capture *c, CUgraph *phGraph, int *done);
/* cuStreamDestroy of a capturing stream: the capture is over, the stream a tombstone. */
void fc_stream_destroy_capturing(struct fc_stream *st);
/* A capture call (query or end) on a handle that is not a live stream: aborts where the
 * real driver segfaults (a stream destroyed while capturing), 709 for another thread's
 * end of it, CUDA_SUCCESS otherwise (the caller then answers INVALID_HANDLE). */
CUresult fc_destroyed_stream_call(CUstream hs, const char *call, int is_end);
/* For stream work (launch, record, async alloc): INVALIDATED if the stream's capture
 * is invalidated, else SUCCESS; *cap is the active capture or NULL. */
CUresult fc_stream_work(struct fc_stream *st, struct fc_capture **cap);
/* Appends a node to an active capture's graph, depending on the capture's last node. */
struct fc_node *fc_capture_add(struct fc_capture *c, CUgraphNodeType type);
/* The open captures, newest first (linked by next). */
struct fc_capture *fc_captures_head(void);

/* ---- third matrix (fake_legacy.c, fake_fork.c) -------------------------------------- */
/* Work on the legacy stream (a launch on it, a synchronous copy or memset) while a
 * blocking stream of the calling thread's context captures: every such capture is
 * invalidated and CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (906) returned, in every mode and
 * from every thread. SUCCESS for any other stream, or when only non-blocking streams
 * capture (the work then runs at once, outside the graph). */
CUresult fc_legacy_work(const struct fc_stream *st);
/* A launch (fake_graph.c), shared by the cuLaunchKernel* entry points. */
CUresult fc_launch_kernel(CUfunction f, const unsigned grid[3], const unsigned block[3],
                          unsigned shmem, CUstream hs, int ptsz, void **params, void **extra);
/* Forks and joins: work on a stream forked into a capture (not where it began) leaves it
 * unjoined until a stream of the capture waits on an event recorded on it after that
 * work. */
void fc_fork_work(struct fc_stream *st);
/* The end of c: CUDA_ERROR_STREAM_CAPTURE_UNJOINED when a forked stream has unjoined
 * work, else SUCCESS. */
CUresult fc_fork_check_end(const struct fc_capture *c);
/* The capture is closing: its forked streams leave it. */
void fc_fork_detach(const struct fc_capture *c);

/* ---- the driver's log (fake_logs.c, driver 12.9 and later) -------------------------- */
/* The cause line the driver logs before the failing call's "Returning" line. */
void fc_logs_cause(const char *cause);
/* Called by fc_leave with the fake's lock held, on the calling thread (as the real driver
 * calls the callback: synchronously, with the offending call on the stack): the cause
 * line (if any) and "Returning N (NAME) from CALL" for a capture error. */
void fc_logs_emit(const char *call, CUresult rc);

/* ---- module images (fake_image.c) --------------------------------------------------- */
enum fc_image_kind { FC_IMG_CUBIN = 1, FC_IMG_FATBIN, FC_IMG_PTX };
/* Recognises a cubin, fatbin (or its wrapper) or PTX text and measures it from its own
 * headers. *start is where the image bytes begin (differs from image for the wrapper).
 * Returns CUDA_ERROR_INVALID_IMAGE or CUDA_ERROR_NO_BINARY_FOR_GPU on rejection. */
CUresult fc_image_inspect(const void *image, size_t limit, int sm, enum fc_image_kind *kind,
                          const unsigned char **start, size_t *size);
/* Whether name is a kernel/global of the image (see fake_image.c for the rule). */
int fc_image_has_name(enum fc_image_kind kind, const unsigned char *img, size_t size,
                      const char *name);

/* ---- modules (fake_module.c) -------------------------------------------------------- */
struct fc_module {
  struct fc_handle h;
  enum fc_image_kind kind;
  unsigned char *image;                    /* private copy, freed at unload */
  size_t size;
  struct fc_function *funcs;
  struct fc_library *lib;                  /* owning library, if any */
  unsigned max_regs;                       /* CU_JIT_MAX_REGISTERS it was loaded with, 0 none */
  int borrowed;                            /* image is the caller's (CU_LIBRARY_BINARY_IS_PRESERVED) */
  char made_with[256];                     /* the options it was loaded with (fc_options_text) */
  struct fc_ctx *ctx;                      /* the context it was loaded in: dies with it */
};

/* ---- JIT options (fake_jit.c) ---------------------------------------------------------- */
struct fc_jit {
  unsigned n;
  CUjit_option *opts;
  void **vals;
  unsigned max_regs;
  double start_ms;
};
/* Checks and reads a load's JIT options (INVALID_VALUE for a bad list). */
CUresult fc_jit_begin(struct fc_jit *j, unsigned n, CUjit_option *opts, void **vals);
/* Writes the output options (wall time, info and error logs) of a load that returned rc. */
void fc_jit_end(struct fc_jit *j, CUresult rc, const char *what);
/* A library load's CUlibraryOption list checked (INVALID_VALUE for a bad one, or
 * binary-is-preserved with a file); *preserved: the caller keeps the bytes alive. */
CUresult fc_library_options(unsigned n, CUlibraryOption *opts, void **vals, int from_file, int *preserved);
/* The options a load was made with, as FAKECUDA_LOADS shows them: "jit:0=32,2,3,4=256;lib:1=1"
 * (outputs and pointers by key alone), "" for none. */
void fc_options_text(char *buf, size_t cap, unsigned n_jit, const CUjit_option *jit, void *const *jit_vals,
                     unsigned n_lib, const CUlibraryOption *lib, void *const *lib_vals);
/* FAKECUDA_LOADS=path: one line per load that returned a module or library. */
void fc_loads_note(const char *call, const void *handle, const char *made_with);
/* CU_FUNC_ATTRIBUTE_NUM_REGS of m's functions. */
int fc_jit_regs(const struct fc_module *m);
struct fc_function {
  struct fc_handle h;
  struct fc_module *mod;
  char *name;
  int max_dynamic_shmem;
  int cache_config;
  struct fc_function *next;
};
struct fc_function *fc_function_live(CUfunction f);

/* ---- kernel parameters (fake_params.c) ---------------------------------------------- */
#define FC_MAX_PARAMS 256
struct fc_param { size_t offset, size; };
/* The function's parameters from its cubin's table: how many (0: none), -1 when the
 * layout is unknown (not a cubin, or a table past max). */
int fc_params_layout(const struct fc_function *fn, struct fc_param *out, int max);
/* Copies a launch's parameters into its captured node (0; -1 out of memory). */
int fc_params_keep(struct fc_node *node, const struct fc_function *fn, void **params);
/* A launch's `extra` array: its argument buffer kept (CU_LAUNCH_PARAM_BUFFER_POINTER and
 * _SIZE); 0, or -1 out of memory, CUDA_ERROR_INVALID_VALUE-worthy -2 for a malformed one. */
int fc_params_keep_extra(struct fc_node *node, void **extra);
void fc_params_drop(struct fc_node *node);
/* A live function named by f, or by a live CUkernel cast to CUfunction (as cuLaunchKernel
 * and the occupancy calls accept since CUDA 12.0); NULL if neither. */
struct fc_function *fc_function_or_kernel(CUfunction f);

#endif
