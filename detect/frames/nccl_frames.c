#include "capguard/nccl_frames.h"

#include <string.h>

const char *cg_nccl_setup_frame(const char *const *native, size_t n) {
  /* the public entry points that set up or grow a communicator (arrays, not
   * pointers: a table of pointers is relocated at every start-up of every
   * process the shim is in) */
  static const char setup[][24] = {"ncclCommInit", "ncclCommSplit", "ncclCommRegister",
                                   "ncclCommWindowRegister", "ncclMemAlloc"};
  for (size_t i = 0; native && i < n; i++) {
    if (!native[i])
      continue;
    for (size_t k = 0; k < sizeof setup / sizeof setup[0]; k++)
      if (strstr(native[i], setup[k]))
        return native[i];
  }
  return NULL;
}
