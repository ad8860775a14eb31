/* Module image inspection: what a pointer handed to cuModuleLoadData & co. holds.
 * The driver API passes images without a length, so the size is read from the
 * image itself. Every read stays inside min(limit, size the headers claim). */
#ifndef CAPGUARD_IMAGE_H
#define CAPGUARD_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest image we will believe: nothing a JIT produces comes near it, and it
 * bounds what a corrupt header can make us read. */
#define CG_IMAGE_MAX_BYTES ((size_t)1 << 30)
#define CG_IMAGE_NAMES_BYTES 4096 /* kernel names, NUL-separated */
#define CG_IMAGE_MAX_ARCHS 16

/* cg_image_kind (unknown; cubin: ELF, e_machine EM_CUDA (190); fatbin:
 * container magic 0xBA55ED50, or its wrapper 0x466243B1; ptx: NUL-terminated
 * text) is a word of the log: its rows, and cg_image_kind_name, are in
 * log_schema.h. */
#include "capguard/log_schema.h"

typedef struct {
  uint64_t hi, lo; /* XXH3-128 */
} cg_hash128;

typedef struct {
  cg_image_kind kind;
  const void *data;  /* start of the image bytes (for a fatbin wrapper: the fatbin it points to) */
  size_t size;       /* exact size in bytes of the image at data */
  unsigned sm_arch;  /* e.g. 90; for a fatbin the highest SASS arch (0 if none) */
  unsigned archs[CG_IMAGE_MAX_ARCHS]; /* fatbin: every entry's arch; others: sm_arch */
  unsigned n_archs;
  bool has_ptx;      /* fatbin holds a PTX entry (JIT-able on newer archs) */
  unsigned sass_archs[CG_IMAGE_MAX_ARCHS]; /* fatbin: the archs of its SASS (ELF) entries */
  unsigned n_sass_archs;
  unsigned ptx_arch;  /* fatbin: the lowest arch of its PTX entries (0: none) */
  unsigned on_device; /* set by the caller that knows the device: the arch it runs the image
                         as (cg_image_arch_on), 0 when unknown */
  /* fatbin: the scratch (bytes) that the largest compressed (LZ4 or zstd)
   * ELF entry whose kernel names were not read (no scratch given, or too
   * little) needs: its size uncompressed, and for zstd the decoder's tables.
   * A caller that wants the names inspects again with that much scratch;
   * 0 when none */
  size_t unpack_room;
  cg_hash128 hash;   /* of size bytes at data */
  unsigned n_kernels;
  bool names_truncated; /* more kernels than fit in kernel_names */
  char kernel_names[CG_IMAGE_NAMES_BYTES]; /* n_kernels names, each NUL-terminated */
  const char *why_unknown; /* static text when kind == CG_IMAGE_UNKNOWN */
} cg_image_info;

/* Inspect the image at p, reading no byte at or past p + limit (use
 * CG_IMAGE_MAX_BYTES when only the pointer is known). Returns 0 and fills *out
 * when the image is recognised; -1 with out->kind = CG_IMAGE_UNKNOWN and
 * out->why_unknown set otherwise. Never allocates. */
int cg_image_inspect(const void *p, size_t limit, cg_image_info *out);
/* The same, and a fatbin's compressed ELF entries (LZ4 or zstd) that fit in
 * scratch (cap bytes, the caller's: unpack_room says how much) are
 * decompressed there, one after the other, for their kernel names. */
int cg_image_inspect_with(const void *p, size_t limit, cg_image_info *out, void *scratch, size_t cap);


/* The architecture a device of arch device_sm (90: sm_90) runs this image
 * as: a cubin's or PTX's own; for a fatbin the SASS entry the driver picks
 * (the highest of the device's major version not above it: sm_90 on an H100
 * from sm_75...sm_120), else, when it holds PTX for that arch or an older
 * one, device_sm itself (the driver compiles the PTX for it), else the
 * highest SASS (sm_arch: it does not run there). device_sm 0: sm_arch. */
unsigned cg_image_arch_on(const cg_image_info *info, unsigned device_sm);

/* Iterate kernel names: for (const char *n = cg_image_first_kernel(i); n; n = cg_image_next_kernel(i, n)) */
const char *cg_image_first_kernel(const cg_image_info *info);
const char *cg_image_next_kernel(const cg_image_info *info, const char *name);

cg_hash128 cg_hash_bytes(const void *p, size_t n);
/* 32 lowercase hex digits + NUL */
void cg_hash_format(cg_hash128 h, char out[33]);

#endif
