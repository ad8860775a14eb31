/* fakecuda: kernel parameters. A launch's parameters are kept in its captured node (the
 * real driver copies them at capture: a graph replays the values it was captured with),
 * and cuFuncGetParamInfo (CUDA 12.4+) says where each one lies.
 *
 * The layout is read from the cubin's own parameter table, as the real driver knows it:
 * the section ".nv.info.<kernel>" holds attributes {u8 format, u8 attribute, ...}; format
 * 4 carries a u16 size and that many bytes, formats 1 to 3 fit in 4 bytes. Attribute 0x17
 * (EIATTR_KPARAM_INFO) is one parameter: u32 index, u16 ordinal, u16 offset, u32 whose
 * bits 18..31 are its size in bytes (checked against nvcc 13.0's output for
 * tests/data/kernels.cu: cg_test_fill(float *, float, int) is 0/8, 8/4, 12/4). Only
 * cubin images are read: a function of a PTX or fatbin module has no known layout, and
 * its launches keep no parameters. */
#include "fake_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EIATTR_KPARAM_INFO 0x17u

static uint16_t rd16(const unsigned char *b) { return (uint16_t)(b[0] | b[1] << 8); }
static uint32_t rd32(const unsigned char *b) { return (uint32_t)rd16(b) | (uint32_t)rd16(b + 2) << 16; }
static uint64_t rd64(const unsigned char *b) { return (uint64_t)rd32(b) | (uint64_t)rd32(b + 4) << 32; }

/* The bytes of section name in the ELF image, or NULL. */
static const unsigned char *elf_section(const unsigned char *img, size_t size, const char *name, size_t *len)
{
  if (size < 64)
    return NULL;
  uint64_t shoff = rd64(img + 0x28);
  unsigned shentsize = rd16(img + 0x3A), shnum = rd16(img + 0x3C), shstrndx = rd16(img + 0x3E);
  if (shentsize != 64 || shstrndx >= shnum || shoff > size || (uint64_t)shnum * 64 > size - shoff)
    return NULL;
  const unsigned char *strsh = img + shoff + (uint64_t)shstrndx * 64;
  uint64_t stroff = rd64(strsh + 0x18), strsize = rd64(strsh + 0x20);
  if (stroff > size || strsize > size - stroff)
    return NULL;
  size_t want = strlen(name);
  for (unsigned i = 0; i < shnum; i++) {
    const unsigned char *sh = img + shoff + (uint64_t)i * 64;
    uint32_t nameoff = rd32(sh);
    uint64_t off = rd64(sh + 0x18), n = rd64(sh + 0x20);
    if (nameoff >= strsize || strsize - nameoff <= want || off > size || n > size - off)
      continue;
    const char *s = (const char *)img + stroff + nameoff;
    if (memcmp(s, name, want + 1) == 0) {
      *len = n;
      return img + off;
    }
  }
  return NULL;
}

int fc_params_layout(const struct fc_function *fn, struct fc_param *out, int max)
{
  if (fn == NULL || fn->mod == NULL || fn->mod->kind != FC_IMG_CUBIN || fn->mod->image == NULL)
    return -1;
  char sect[300];
  if ((size_t)snprintf(sect, sizeof(sect), ".nv.info.%s", fn->name) >= sizeof(sect))
    return -1;
  size_t len = 0;
  const unsigned char *a = elf_section(fn->mod->image, fn->mod->size, sect, &len);
  if (a == NULL)
    return 0;   /* no table: a kernel without parameters */
  int n = 0;
  for (size_t i = 0; i + 4 <= len;) {
    unsigned fmt = a[i], attr = a[i + 1];
    size_t step = fmt == 4 ? 4 + (size_t)rd16(a + i + 2) : 4;
    if (step > len - i)
      return -1;
    if (fmt == 4 && attr == EIATTR_KPARAM_INFO && step >= 16) {
      unsigned ordinal = rd16(a + i + 8), offset = rd16(a + i + 10);
      unsigned psize = (rd32(a + i + 12) >> 18) & 0x3fff;
      if ((int)ordinal >= max)
        return -1;
      out[ordinal].offset = offset;
      out[ordinal].size = psize;
      if ((int)ordinal + 1 > n)
        n = (int)ordinal + 1;
    }
    i += step;
  }
  return n;
}

int fc_params_keep(struct fc_node *node, const struct fc_function *fn, void **params)
{
  struct fc_param lay[FC_MAX_PARAMS];
  int n = fc_params_layout(fn, lay, FC_MAX_PARAMS);
  if (n <= 0 || params == NULL)
    return 0;   /* nothing to keep (or a layout the fake does not know) */
  size_t total = 0;
  for (int i = 0; i < n; i++)
    if (lay[i].offset + lay[i].size > total)
      total = lay[i].offset + lay[i].size;
  node->param_bytes = calloc(1, total ? total : 1);
  node->param_ptrs = calloc((size_t)n, sizeof(void *));
  if (node->param_bytes == NULL || node->param_ptrs == NULL) {
    free(node->param_bytes);
    free(node->param_ptrs);
    node->param_bytes = NULL;
    node->param_ptrs = NULL;
    return -1;
  }
  for (int i = 0; i < n; i++) {
    memcpy(node->param_bytes + lay[i].offset, params[i], lay[i].size);
    node->param_ptrs[i] = node->param_bytes + lay[i].offset;
  }
  node->n_params = (size_t)n;
  return 0;
}

int fc_params_keep_extra(struct fc_node *node, void **extra)
{
  const void *buf = NULL;
  size_t size = 0;
  int has_size = 0;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (i >= 16)
      return -2;   /* no END where a real array would have one */
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != NULL) {
      size = *(const size_t *)extra[i + 1];
      has_size = 1;
    } else
      return -2;
  }
  if (buf == NULL || !has_size || size > 32764)
    return -2;
  node->extra_bytes = calloc(1, size ? size : 1);
  if (node->extra_bytes == NULL)
    return -1;
  memcpy(node->extra_bytes, buf, size);
  node->extra_size = size;
  node->extra_arr[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
  node->extra_arr[1] = node->extra_bytes;
  node->extra_arr[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
  node->extra_arr[3] = &node->extra_size;
  node->extra_arr[4] = CU_LAUNCH_PARAM_END;
  return 0;
}

void fc_params_drop(struct fc_node *node)
{
  free(node->extra_bytes);
  node->extra_bytes = NULL;
  free(node->param_bytes);
  free(node->param_ptrs);
  node->param_bytes = NULL;
  node->param_ptrs = NULL;
  node->n_params = 0;
}

/* CUDA 12.4 and later; an older driver has no such entry point (the fake, which exports
 * every name, answers as a driver without it would be reached: not supported). */
FC_EXPORT CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                              size_t *paramSize)
{
  FC_BEGIN;
  CUresult rc = fc_env_driver_version() < 12040 ? CUDA_ERROR_NOT_SUPPORTED : fc_need_init();
  struct fc_function *f = rc == CUDA_SUCCESS ? fc_function_or_kernel(func) : NULL;
  if (rc == CUDA_SUCCESS && f == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  struct fc_param lay[FC_MAX_PARAMS];
  int n = rc == CUDA_SUCCESS ? fc_params_layout(f, lay, FC_MAX_PARAMS) : 0;
  if (rc == CUDA_SUCCESS && n < 0)
    rc = CUDA_ERROR_NOT_SUPPORTED;
  else if (rc == CUDA_SUCCESS && (paramIndex >= (size_t)n || paramOffset == NULL || paramSize == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;   /* past the last parameter, as the real driver answers */
  if (rc == CUDA_SUCCESS) {
    *paramOffset = lay[paramIndex].offset;
    *paramSize = lay[paramIndex].size;
  }
  FC_END(rc);
}
