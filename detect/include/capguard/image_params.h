/* A kernel's parameter layout, read from a cubin's own table (the section
 * ".nv.info.<kernel>", attribute EIATTR_KPARAM_INFO): where each parameter
 * lies in the kernel's parameter buffer. What cuFuncGetParamInfo answers on
 * drivers 12.4 and later; capguard's stale-pointer check reads it from the
 * image on older ones. Pure parsing: bounded reads, no allocation. */
#ifndef CAPGUARD_IMAGE_PARAMS_H
#define CAPGUARD_IMAGE_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "capguard/image.h"

typedef struct {
  uint16_t offset, size; /* bytes into the parameter buffer; bytes (CUDA's limit is 32764 in all) */
} cg_param_slot;

/* The layout of kernel in the image info describes (cg_image_inspect's, a
 * cubin): fills out[0..n) and returns n (0: no parameters), or -1 when the
 * image is no cubin, has no table for that kernel, or the table is
 * malformed or has more than max parameters. */
int cg_image_kernel_params(const cg_image_info *info, const char *kernel, cg_param_slot *out, int max);

#endif
