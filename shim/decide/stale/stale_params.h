/* Kernel parameter layouts for the stale-pointer check on drivers without
 * cuFuncGetParamInfo (before CUDA 12.4): read from the cubin the program
 * loaded, kept per module, and found again for a graph node's function
 * through cuFuncGetModule and cuModuleGetFunction (both queries). */
#ifndef CAPGUARD_STALE_PARAMS_H
#define CAPGUARD_STALE_PARAMS_H

#include <cuda.h>
#include <stdbool.h>

#include "capguard/image_params.h"

#define CG_STALE_MAX_PARAMS 128

/* A module (library: its module) loaded from the image in memory: its
 * kernels' layouts kept (only with CAPGUARD_STALE=1 on such a driver; only
 * cubins; the newest 256 modules). */
void cg_stale_module_loaded(void *handle, bool library, const void *image);
/* Whether any layout is kept (the walk can split parameters this way). */
bool cg_stale_params_known(void);
/* f's layout: fills out and returns how many parameters, -1 when unknown. */
int cg_stale_params_of(CUfunction f, cg_param_slot *out, int max);
/* Fork: the child's lock is a fresh one. */
void cg_stale_params_atfork_child(void);
/* The kernel's name for f from the kept layouts into buf: false when unknown. */
bool cg_stale_params_name(CUfunction f, char *buf, size_t cap);

#endif
