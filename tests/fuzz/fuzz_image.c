/* libFuzzer target for cg_image_inspect: any byte string, any outcome, but the
 * result must describe only bytes of the input, and the size it reports must
 * be exact (the image inspected with that size as its limit comes out the
 * same; one byte less is refused). Built as a libFuzzer binary with
 * -Dfuzz=true and clang, and always linked into the replay runner. */
#include "capguard/image.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond)                                                         \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "fuzz_image: %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
      abort();                                                                \
    }                                                                         \
  } while (0)

/* The replay runner places each input right before a PROT_NONE page and
 * sets this: everything past the input is then unreadable, so inspecting it
 * as a bare pointer (the shim's way, probing before reading) must give the
 * same answer as with the input's length. (Under libFuzzer the bytes past
 * the input are ASan's heap: a bare read there would be a false report.) */
extern int cg_fuzz_input_at_guard __attribute__((weak));

#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_UNDER_ASAN 1
#endif
#endif

static void check_names(const cg_image_info *info) {
  unsigned count = 0;
  for (const char *k = cg_image_first_kernel(info); k; k = cg_image_next_kernel(info, k)) {
    REQUIRE(k >= info->kernel_names);
    size_t len = strnlen(k, (size_t)(info->kernel_names + sizeof info->kernel_names - k));
    REQUIRE(len > 0);
    REQUIRE(k + len < info->kernel_names + sizeof info->kernel_names);
    REQUIRE(++count <= info->n_kernels);
  }
  REQUIRE(count == info->n_kernels);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void check_bare(const uint8_t *data, size_t size, int rc, const cg_image_info *info) {
  static cg_image_info bare;
  static const uint8_t wrapper_magic[4] = {0xB1, 0x43, 0x62, 0x46};
  if (!&cg_fuzz_input_at_guard || !cg_fuzz_input_at_guard) return;
  bool wrapper = size >= 4 && memcmp(data, wrapper_magic, 4) == 0;
#ifdef FUZZ_UNDER_ASAN
  /* A wrapper's pointer leads anywhere, ASan's own shadow memory included,
   * which is readable but which instrumented code cannot load from. */
  if (wrapper) return;
#endif
  int brc = cg_image_inspect(data, CG_IMAGE_MAX_BYTES, &bare);
  /* A wrapper's pointer leads outside the input: anything may lie there. */
  if (wrapper) return;
  REQUIRE(brc == rc);
  if (rc == 0) {
    REQUIRE(bare.kind == info->kind && bare.size == info->size && bare.data == info->data);
    REQUIRE(bare.hash.hi == info->hash.hi && bare.hash.lo == info->hash.lo);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static cg_image_info info, again; /* ~4 KB each: keep them off the stack */
  int rc = cg_image_inspect(data, size, &info);
  check_bare(data, size, rc, &info);
  if (rc != 0) {
    REQUIRE(rc == -1);
    REQUIRE(info.kind == CG_IMAGE_UNKNOWN);
    REQUIRE(info.why_unknown != NULL && info.why_unknown[0] != '\0');
    REQUIRE(info.n_kernels == 0 && info.size == 0);
    return 0;
  }
  REQUIRE(info.kind == CG_IMAGE_CUBIN || info.kind == CG_IMAGE_FATBIN || info.kind == CG_IMAGE_PTX);
  REQUIRE(info.why_unknown == NULL);
  /* A wrapper's pointer can only be followed inside the input. */
  const uint8_t *p = info.data;
  REQUIRE(p >= data && p <= data + size);
  REQUIRE(info.size > 0 && info.size <= (size_t)(data + size - p));
  REQUIRE(info.n_archs <= CG_IMAGE_MAX_ARCHS);
  if (info.kind != CG_IMAGE_FATBIN) REQUIRE(info.n_archs <= 1);
  if (info.kind == CG_IMAGE_PTX) {
    REQUIRE(p[info.size - 1] == '\0');
    REQUIRE(memchr(p, '\0', info.size - 1) == NULL);
  }
  check_names(&info);
  cg_hash128 h = cg_hash_bytes(p, info.size);
  REQUIRE(h.hi == info.hash.hi && h.lo == info.hash.lo);

  if (p == data) { /* exactness of the size (not for a wrapper: its bound is the input) */
    REQUIRE(cg_image_inspect(data, info.size, &again) == 0);
    REQUIRE(again.kind == info.kind && again.size == info.size && again.sm_arch == info.sm_arch);
    REQUIRE(again.n_kernels == info.n_kernels && again.n_archs == info.n_archs);
    REQUIRE(memcmp(again.kernel_names, info.kernel_names, sizeof info.kernel_names) == 0);
    REQUIRE(cg_image_inspect(data, info.size - 1, &again) == -1);
  }
  /* With scratch for LZ4-compressed entries (bytes that may decode to
   * anything): the same image, the same size and hash, names still sound. */
  static unsigned char scratch[1 << 16];
  REQUIRE(cg_image_inspect_with(data, size, &again, scratch, sizeof scratch) == 0);
  REQUIRE(again.kind == info.kind && again.size == info.size && again.data == info.data);
  REQUIRE(again.hash.hi == info.hash.hi && again.hash.lo == info.hash.lo);
  REQUIRE(again.n_kernels >= info.n_kernels);
  check_names(&again);
  return 0;
}
