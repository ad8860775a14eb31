/* The driver entry points capguard wraps: one row per exported variant of the
 * real libcuda (version suffix and _ptsz included). Each row has a wrapper,
 * defined as cg_w_<name> and exported as <name>, and a slot for the driver's
 * own pointer. Every other entry point is never touched: callers get the
 * driver's pointer. */
#ifndef CAPGUARD_ENTRY_POINTS_H
#define CAPGUARD_ENTRY_POINTS_H

#include <stddef.h>

#define CG_ENTRY_POINTS(X)                  \
  X(cuGetProcAddress)                       \
  X(cuGetProcAddress_v2)                    \
  X(cuStreamBeginCapture)                   \
  X(cuStreamBeginCapture_ptsz)              \
  X(cuStreamBeginCapture_v2)                \
  X(cuStreamBeginCapture_v2_ptsz)           \
  X(cuStreamBeginCaptureToGraph)            \
  X(cuStreamBeginCaptureToGraph_ptsz)       \
  X(cuStreamEndCapture)                     \
  X(cuStreamEndCapture_ptsz)                \
  X(cuThreadExchangeStreamCaptureMode)      \
  X(cuModuleLoad)                           \
  X(cuModuleLoadData)                       \
  X(cuModuleLoadDataEx)                     \
  X(cuModuleLoadFatBinary)                  \
  X(cuModuleUnload)                         \
  X(cuLibraryLoadData)                      \
  X(cuLibraryLoadFromFile)                  \
  X(cuLibraryUnload)

typedef enum {
#define CG_EP_ENUM(name) CG_EP_##name,
  CG_ENTRY_POINTS(CG_EP_ENUM)
#undef CG_EP_ENUM
  CG_EP_COUNT
} cg_entry_point;

extern const char *const cg_ep_name[CG_EP_COUNT];
/* capguard's wrapper for each row (what callers get instead of the driver's). */
extern void *const cg_ep_wrapper[CG_EP_COUNT];
/* The driver's own pointer for each row, filled by cg_driver_ready(); NULL
 * when this driver lacks that variant. */
extern void *cg_ep_real[CG_EP_COUNT];

/* The real function behind a row, as a typed pointer. */
#define CG_REAL(name, type) ((type)cg_ep_real[CG_EP_##name])

/* Row for an exported name, or -1. */
int cg_ep_find(const char *name);

#endif
