/* Fuzz target of detect/image/zstd_decode.c.
 *
 * (a) The input as a zstd stream, decoded into a buffer of exactly the cap a
 *     byte of the input picks: no crash, no read past the input (libFuzzer's
 *     and the replay runner's inputs end at their allocation or a PROT_NONE
 *     page), no write past the cap (ASan), a length within it.
 * With libzstd at build time (CG_FUZZ_LIBZSTD, libzstd-dev: test-only, never
 * in the shim or the command), differentially:
 * (b) the input compressed by libzstd, at a level its first byte picks (-5
 *     to 22), must decode to exactly the input;
 * (c) when libzstd decodes the input itself, ours must give the same bytes
 *     (unless the input holds a legacy v0.x frame, which we do not read),
 *     but for two kinds of stream that libzstd 1.5.4 accepts and the RFC
 *     does not, decoded by libzstd from bits of its own: a Huffman stream
 *     whose last symbol reads past the stream's start or leaves bits unread
 *     (its two-symbol decoder's last lookup; a mutation of nvcc's frame
 *     decoded to 0x00 where the zero-filled code says 0x5f) or whose last
 *     byte is 0, no end marker (its fast loop's start), and a
 *     sequences' bit stream read past its start (9 bits, in a mutation of a
 *     zstd -3 frame). We say CG_ZSTD_HUFFMAN_END and CG_ZSTD_SEQUENCES_END
 *     there, and only there; both found by this target in its first seconds. */
#include "capguard/zstd_decode.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef CG_FUZZ_LIBZSTD
#include <zstd.h>
#endif

#define REQUIRE(c)                                                                                      \
  do {                                                                                                  \
    if (!(c)) {                                                                                         \
      fprintf(stderr, "fuzz_zstd: %s:%d: %s\n", __FILE__, __LINE__, #c);                                \
      abort();                                                                                          \
    }                                                                                                   \
  } while (0)

#define OUT_MAX ((size_t)1 << 20)

static cg_zstd_work work;

#ifdef CG_FUZZ_LIBZSTD
/* Whether every frame of src is a zstd v1 or skippable frame (libzstd may
 * also read the legacy formats). */
static int modern_frames_only(const uint8_t *src, size_t n) {
  while (n >= 4) {
    uint32_t m = (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
    if (m != ZSTD_MAGICNUMBER && (m & 0xFFFFFFF0u) != ZSTD_MAGIC_SKIPPABLE_START) return 0;
    size_t f = ZSTD_findFrameCompressedSize(src, n);
    if (ZSTD_isError(f) || f > n) return 0;
    src += f;
    n -= f;
  }
  return 1;
}

static void differential(const uint8_t *data, size_t size) {
  static uint8_t mine[OUT_MAX];
  size_t len;
  /* (b) libzstd's frame of the input */
  int level = size ? (int)(data[0] % 28) - 5 : 3;
  if (level == 0) level = 1;
  size_t bound = ZSTD_compressBound(size);
  uint8_t *z = malloc(bound);
  REQUIRE(z);
  size_t zn = ZSTD_compress(z, bound, data, size, level);
  REQUIRE(!ZSTD_isError(zn));
  cg_zstd_status s = cg_zstd_decode(z, zn, mine, size, &len, &work);
  if (s != CG_ZSTD_OK) fprintf(stderr, "fuzz_zstd: level %d: %s\n", level, cg_zstd_status_text(s));
  REQUIRE(s == CG_ZSTD_OK);
  REQUIRE(len == size && (size == 0 || memcmp(mine, data, size) == 0));
  free(z);
  /* (c) what libzstd decodes, we decode the same */
  static uint8_t theirs[OUT_MAX];
  static ZSTD_DCtx *dctx;
  if (!dctx) dctx = ZSTD_createDCtx();
  REQUIRE(dctx);
  size_t tn = ZSTD_decompressDCtx(dctx, theirs, sizeof theirs, data, size);
  if (ZSTD_isError(tn) || !modern_frames_only(data, size)) return;
  s = cg_zstd_decode(data, size, mine, sizeof mine, &len, &work);
  if (s == CG_ZSTD_HUFFMAN_END || s == CG_ZSTD_SEQUENCES_END) return;
  if (s != CG_ZSTD_OK) fprintf(stderr, "fuzz_zstd: libzstd decodes %zu bytes, we: %s\n", tn, cg_zstd_status_text(s));
  REQUIRE(s == CG_ZSTD_OK);
  REQUIRE(len == tn && memcmp(mine, theirs, tn) == 0);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* (a) the cap: small, the input's size times a factor, or large */
  size_t cap = size ? (size_t)data[size - 1] * 64 + (data[size - 1] & 1 ? size * 8 : 0) : 0;
  if (cap > OUT_MAX) cap = OUT_MAX;
  uint8_t *out = malloc(cap ? cap : 1);
  REQUIRE(out);
  size_t len = 0;
  cg_zstd_status s = cg_zstd_decode(data, size, out, cap, &len, &work);
  REQUIRE(cg_zstd_status_text(s) != NULL);
  if (s == CG_ZSTD_OK) REQUIRE(len <= cap);
  free(out);
#ifdef CG_FUZZ_LIBZSTD
  differential(data, size);
#endif
  return 0;
}
