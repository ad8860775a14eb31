/* NCCL's communicator set-up in a call's native stack: lazy communicator
 * initialisation (ncclCommInit*, ncclCommSplit), buffer registration
 * (ncclCommRegister, ncclCommWindowRegister) and NCCL's own allocations
 * (ncclMemAlloc) allocate, and so break a capture they run in; a call made
 * from inside them is named as communicator set-up. */
#ifndef CAPGUARD_NCCL_FRAMES_H
#define CAPGUARD_NCCL_FRAMES_H

#include <stddef.h>

/* The innermost frame of native[0..n) inside NCCL's communicator set-up,
 * NULL when none is. */
const char *cg_nccl_setup_frame(const char *const *native, size_t n);

#endif
