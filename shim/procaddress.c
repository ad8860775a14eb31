/* cuGetProcAddress and cuGetProcAddress_v2: the route cudart (and so torch)
 * takes to nearly every driver entry point. The driver answers first, with
 * the caller's own symbol, version and flags; capguard then swaps in its
 * wrapper only if the pointer handed back is one of the driver's entry
 * points it wraps (compared by address, so the version and per-thread-stream
 * choice is always the driver's). Anything else is the driver's own pointer. */
#include "guard.h"
#include "wrapper.h"

typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

CG_WRAPPER(CUresult, cuGetProcAddress, (const char *symbol, void **pfn, int version, cuuint64_t flags)) {
  CG_REAL_OR_RETURN(cuGetProcAddress, gpa_v1_fn, real);
  CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn)
    *pfn = cg_wrap_pointer(*pfn);
  return r;
}

CG_WRAPPER(CUresult, cuGetProcAddress_v2,
           (const char *symbol, void **pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status)) {
  CG_REAL_OR_RETURN(cuGetProcAddress_v2, gpa_v2_fn, real);
  CUresult r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn)
    *pfn = cg_wrap_pointer(*pfn);
  return r;
}
