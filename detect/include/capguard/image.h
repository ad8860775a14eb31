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


/* Iterate kernel names: for (const char *n = cg_image_first_kernel(i); n; n = cg_image_next_kernel(i, n)) */
const char *cg_image_first_kernel(const cg_image_info *info);
const char *cg_image_next_kernel(const cg_image_info *info, const char *name);

cg_hash128 cg_hash_bytes(const void *p, size_t n);
/* 32 lowercase hex digits + NUL */
void cg_hash_format(cg_hash128 h, char out[33]);

#endif
