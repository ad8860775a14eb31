/* How capguard's test, bench and demo programs reach the CUDA driver: the way
 * cudart (and so torch) does. dlopen("libcuda.so.1"), dlsym of
 * cuGetProcAddress_v2, ask it for "cuGetProcAddress" at 12000, then every
 * entry point through that. One copy of the preamble the programs shared;
 * not part of the shim, which never links it. */
#ifndef CAPGUARD_TESTKIT_DRIVER_OPEN_H
#define CAPGUARD_TESTKIT_DRIVER_OPEN_H

#include <cuda.h>

/* Open the driver. who names the program in messages ("engine", "worker 3").
 * 0, or -1 with nothing opened (no libcuda.so.1, or no cuGetProcAddress). */
int tk_driver_open(const char *who);
/* The same library, but every entry point by dlsym on its handle: the route
 * torch's driver table takes, for the benches that measure it. */
int tk_driver_open_dlsym(const char *who);
/* An entry point (through cuGetProcAddress, or dlsym after tk_driver_open_dlsym); one line on stderr and exit(2)
 * when the driver has none. */
void *tk_driver_get(const char *name);
/* The dlopen handle, for programs that also take torch's route (dlsym). */
void *tk_driver_handle(void);
/* cuInit, device 0's primary context made current, and when s is not NULL a
 * non-blocking stream. The first failing call's result, or CUDA_SUCCESS. */
CUresult tk_driver_setup(CUstream *s);

#endif
