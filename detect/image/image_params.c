/* cg_image_kernel_params (image_params.h). A cubin's ".nv.info.<kernel>"
 * section is a run of attributes {u8 format, u8 attribute, ...}: format 4
 * carries a u16 size and that many bytes, formats 1 to 3 fit in 4 bytes.
 * Attribute 0x17 (EIATTR_KPARAM_INFO), one per parameter: u32 index, u16
 * ordinal, u16 offset, u32 whose bits 18..31 are the size in bytes (nvcc
 * 13.0's output for tests/data/kernels.cu: cg_test_fill(float *, float, int)
 * is 0/8, 8/4, 12/4). Every read is checked against the image's size. */
#include "capguard/image_params.h"

#include <stdbool.h>
#include <string.h>

#define EIATTR_KPARAM_INFO 0x17u
#define SHDR 64u

static uint32_t rd16(const unsigned char *b) { return (uint32_t)b[0] | (uint32_t)b[1] << 8; }
static uint32_t rd32(const unsigned char *b) { return rd16(b) | rd16(b + 2) << 16; }
static uint64_t rd64(const unsigned char *b) { return (uint64_t)rd32(b) | (uint64_t)rd32(b + 4) << 32; }

/* [off, off + n) inside size */
static bool inside(uint64_t off, uint64_t n, uint64_t size) { return off <= size && n <= size - off; }

/* The section named ".nv.info." kernel: its bytes and length, or NULL. */
static const unsigned char *info_section(const unsigned char *img, uint64_t size, const char *kernel, uint64_t *len) {
  static const char prefix[] = ".nv.info.";
  if (size < 64)
    return NULL;
  uint64_t shoff = rd64(img + 0x28);
  uint32_t shentsize = rd16(img + 0x3A), shnum = rd16(img + 0x3C), shstrndx = rd16(img + 0x3E);
  if (shentsize != SHDR || shstrndx >= shnum || !inside(shoff, (uint64_t)shnum * SHDR, size))
    return NULL;
  const unsigned char *strsh = img + shoff + (uint64_t)shstrndx * SHDR;
  uint64_t stroff = rd64(strsh + 0x18), strsize = rd64(strsh + 0x20);
  if (!inside(stroff, strsize, size))
    return NULL;
  size_t klen = strlen(kernel), plen = sizeof prefix - 1;
  for (uint32_t i = 0; i < shnum; i++) {
    const unsigned char *sh = img + shoff + (uint64_t)i * SHDR;
    uint64_t name = rd32(sh), off = rd64(sh + 0x18), n = rd64(sh + 0x20);
    if (!inside(name, plen + klen + 1, strsize) || !inside(off, n, size))
      continue;
    const char *s = (const char *)img + stroff + name;
    if (memcmp(s, prefix, plen) == 0 && memcmp(s + plen, kernel, klen) == 0 && s[plen + klen] == 0) {
      *len = n;
      return img + off;
    }
  }
  return NULL;
}

int cg_image_kernel_params(const cg_image_info *info, const char *kernel, cg_param_slot *out, int max) {
  if (!info || !kernel || info->kind != CG_IMAGE_CUBIN || !info->data)
    return -1;
  uint64_t len = 0;
  const unsigned char *a = info_section(info->data, info->size, kernel, &len);
  if (!a)
    return -1;
  int n = 0;
  for (uint64_t i = 0; i + 4 <= len;) {
    uint32_t fmt = a[i], attr = a[i + 1];
    uint64_t step = fmt == 4 ? 4 + (uint64_t)rd16(a + i + 2) : 4;
    if (step > len - i)
      return -1;
    if (fmt == 4 && attr == EIATTR_KPARAM_INFO) {
      if (step < 16)
        return -1;
      uint32_t ordinal = rd16(a + i + 8), offset = rd16(a + i + 10), psize = (rd32(a + i + 12) >> 18) & 0x3fff;
      if (ordinal >= (uint32_t)max)
        return -1;
      out[ordinal].offset = (uint16_t)offset;
      out[ordinal].size = (uint16_t)psize;
      if ((int)ordinal + 1 > n)
        n = (int)ordinal + 1;
    }
    i += step;
  }
  return n;
}
