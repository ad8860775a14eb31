/* Little-endian fields of an image's headers, read and written in place by
 * the image tests (test_image.c, test_image_zstd.c) to build known-good and
 * damaged images. */
#ifndef CAPGUARD_TESTS_IMAGE_FIELDS_H
#define CAPGUARD_TESTS_IMAGE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t get(const unsigned char *p, size_t off, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; i--) v = v << 8 | p[off + (size_t)i];
  return v;
}

static inline void put(unsigned char *p, size_t off, int width, uint64_t v) {
  for (int i = 0; i < width; i++) p[off + (size_t)i] = (unsigned char)(v >> (8 * i));
}

#endif
