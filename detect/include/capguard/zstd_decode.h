/* A Zstandard (RFC 8878) decoder: what nvcc and torch's CUDA 13 fatbins
 * compress their entries with (entry flag 0x8000), decoded for the kernel
 * names of the ELF inside. Written from the RFC; libc only, so that the shim
 * may carry it.
 *
 * Made to be fed hostile bytes inside someone else's process: it reads no
 * byte outside src[0, n), writes no byte outside dst[0, cap), allocates
 * nothing, never recurses, and its work is bounded by n and cap. No
 * dictionary: a frame that names one fails. */
#ifndef CAPGUARD_ZSTD_DECODE_H
#define CAPGUARD_ZSTD_DECODE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  CG_ZSTD_OK = 0,
  CG_ZSTD_TRUNCATED,        /* the input ends inside a frame */
  CG_ZSTD_BAD_MAGIC,        /* not a zstd frame nor a skippable one */
  CG_ZSTD_BAD_HEADER,       /* reserved bit set in the frame header */
  CG_ZSTD_DICTIONARY,       /* the frame needs a dictionary */
  CG_ZSTD_TOO_BIG,          /* the output would not fit in cap */
  CG_ZSTD_BAD_BLOCK,        /* reserved block type, or a block larger than 128 KiB */
  CG_ZSTD_BAD_LITERALS,     /* malformed literals section */
  CG_ZSTD_BAD_HUFFMAN,      /* malformed Huffman tree or stream */
  CG_ZSTD_BAD_FSE,          /* malformed FSE table description */
  CG_ZSTD_BAD_SEQUENCES,    /* malformed sequences section */
  CG_ZSTD_BAD_OFFSET,       /* a match reaches before the frame's output */
  CG_ZSTD_NO_TABLE,         /* a repeat mode with no earlier table */
  CG_ZSTD_SIZE_MISMATCH,    /* the output differs from the frame's content size */
  CG_ZSTD_CHECKSUM,         /* the content checksum does not match */
  CG_ZSTD_HUFFMAN_END,      /* a Huffman stream lacks its end marker, or does not end exactly after its last symbol */
  CG_ZSTD_SEQUENCES_END,    /* the sequences' bit stream does not end exactly after the last one */
} cg_zstd_status;

/* The decoder's tables (Huffman: 4096 cells; FSE: literal lengths, match
 * lengths, offsets), about 14 KB: the caller's, on the heap or in scratch it
 * owns. Its fields are the decoder's own. */
typedef struct {
  uint8_t sym, bits;
} cg_zstd_huf_cell;
typedef struct {
  uint16_t base;
  uint8_t sym, bits;
} cg_zstd_fse_cell;
typedef struct {
  cg_zstd_huf_cell huf[1 << 12];
  cg_zstd_fse_cell ll[1 << 9], ml[1 << 9], of[1 << 8];
  unsigned huf_log, ll_log, ml_log, of_log;
  int have_huf, have_ll, have_ml, have_of;
  uint64_t rep[3];
} cg_zstd_work;

/* Decodes every frame of src[0, n) (skippable frames skipped, none at all
 * gives empty output) into dst[0, cap); *len is the decoded size. All of
 * dst[0, cap) may be written (literals are staged at its end). Returns
 * CG_ZSTD_OK or why not; *len is then meaningless. */
cg_zstd_status cg_zstd_decode(const void *src, size_t n, void *dst, size_t cap, size_t *len, cg_zstd_work *w);

/* One line saying what a status means ("zstd: ..."). */
const char *cg_zstd_status_text(cg_zstd_status s);

#endif
