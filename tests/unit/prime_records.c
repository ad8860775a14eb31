#include "prime_records.h"

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

uint8_t *image_bytes(uint32_t seed, size_t size) {
  uint8_t *b = malloc(size);
  uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (size_t i = 0; b && i < size; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b[i] = (uint8_t)x;
  }
  return b;
}

cg_hash128 hash_of(const void *p, size_t n) {
  XXH128_hash_t h = XXH3_128bits(p, n);
  return (cg_hash128){h.high64, h.low64};
}

cg_prime_record make_record(uint32_t seed, size_t size) {
  static const char names[] = "kern_a\0kern_bb"; /* + the literal's NUL: 15 bytes, 2 names */
  cg_prime_record r = {0};
  r.kind = (cg_image_kind)(1 + seed % 3);
  r.sm_arch = 70 + seed % 30;
  r.bytes = image_bytes(seed, size);
  r.size = size;
  r.hash = hash_of(r.bytes, size);
  r.n_kernels = 2;
  r.names_len = sizeof names;
  r.kernel_names = names;
  r.hits = 1;
  r.first_ns = 1000 + seed;
  r.last_ns = 2000 + seed;
  return r;
}

void free_record(cg_prime_record *r) { free((void *)r->bytes); }

void collect_warning(void *ctx, const char *line) {
  warnings *w = ctx;
  ck_assert_ptr_null(strchr(line, '\n'));
  ck_assert_msg(strncmp(line, "capguard: priming file ", 23) == 0, "warning: %s", line);
  w->n++;
  snprintf(w->last, sizeof w->last, "%s", line);
}

void make_test_dir(char *dir, size_t cap, const char *tag) {
  umask(022);
  snprintf(dir, cap, "/tmp/%s.XXXXXX", tag);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(p);
}

void remove_test_dir(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

const cg_prime_record *prime_find(const cg_prime_set *s, const void *bytes, size_t size) {
  if (!bytes || size == 0)
    return NULL;
  return cg_prime_find_hashed(s, cg_hash_bytes(bytes, size), bytes, size, NULL, 0);
}
