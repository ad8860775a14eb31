/* Kernel parameter layouts for the stale-pointer check's walk, kept per
 * function: a graph's hundred kernel nodes launch a few functions, so the
 * driver (cuFuncGetParamInfo, one call a parameter) or the image's table
 * (stale_params.c) is asked once per function, not once per node. */
#ifndef CAPGUARD_STALE_LAYOUTS_H
#define CAPGUARD_STALE_LAYOUTS_H

#include <cuda.h>
#include <stdbool.h>

#include "capguard/image_params.h"

/* Whether parameters can be split on this driver at all (cuFuncGetParamInfo,
 * 12.4+, or layouts kept from the images loaded). */
bool cg_stale_layouts_ready(void);
/* f's layout into out (at most max): how many parameters, -1 when unknown. */
int cg_stale_layout(CUfunction f, cg_param_slot *out, int max);
/* A module or library unloaded: its functions' handles may come back as
 * other functions, so every kept layout is forgotten. */
void cg_stale_layouts_forget(void);
/* Fork: the child's lock is a fresh one. */
void cg_stale_layouts_atfork_child(void);

#endif
