/* Test helper: append a deterministic image to a priming file, so that shell
 * tests and the fuzz seed corpus can build files through the real writer.
 *   prime_fixture FILE SEED SIZE [HITS [DAYS-AGO]]
 * The image is SIZE pseudo-random bytes picked by SEED, kind 1 + SEED % 3,
 * sm_(80 + SEED % 10), kernels kern_SEED_a and kern_SEED_b; it was last needed
 * DAYS-AGO days ago (default 0). Prints the image's 32-digit hash.
 *   prime_fixture --age FILE DAYS
 * rewrites FILE with every image last (and first) needed DAYS days ago, as
 * if no run had needed it since: for the prune tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "capguard/prime_file.h"

static void warn_line(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "%s\n", line);
}

static int age(const char *path, uint64_t days) {
  cg_prime_set *set = NULL;
  if (cg_prime_load(path, &set, warn_line, NULL) != 0)
    return 1;
  size_t n = cg_prime_count(set);
  cg_prime_record *recs = calloc(n ? n : 1, sizeof *recs);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t then = ((uint64_t)ts.tv_sec - days * 86400u) * 1000000000u;
  for (size_t i = 0; i < n; i++) {
    recs[i] = *cg_prime_get(set, i);
    recs[i].first_ns = recs[i].last_ns = then;
  }
  /* the set's bytes stay mapped from the old file while the new one is written */
  int rc = unlink(path) != 0 || cg_prime_add_records(path, recs, n, warn_line, NULL) != 0;
  free(recs);
  cg_prime_free(set);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--age"))
    return age(argv[2], strtoull(argv[3], NULL, 10));
  if (argc < 4 || argc > 6) {
    fprintf(stderr, "usage: prime_fixture FILE SEED SIZE [HITS [DAYS-AGO]]\n");
    return 2;
  }
  unsigned seed = (unsigned)strtoul(argv[2], NULL, 10);
  size_t size = strtoul(argv[3], NULL, 10);
  uint8_t *b = malloc(size ? size : 1);
  uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (size_t i = 0; i < size; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b[i] = (uint8_t)x;
  }
  char names[64];
  int n = snprintf(names, sizeof names, "kern_%u_a%ckern_%u_b", seed, 0, seed);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  uint64_t days = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
  XXH128_hash_t h = XXH3_128bits(b, size);
  cg_prime_record r = {
      .kind = (cg_image_kind)(1 + seed % 3),
      .sm_arch = 80 + seed % 10,
      .hash = {h.high64, h.low64},
      .size = size,
      .bytes = b,
      .n_kernels = 2,
      .names_len = (uint32_t)n + 1,
      .kernel_names = names,
      .hits = argc > 4 ? strtoull(argv[4], NULL, 10) : 1,
      .last_ns = now - days * 86400ull * 1000000000u,
  };
  r.first_ns = r.last_ns - 1000000000u;
  int rc = cg_prime_append(argv[1], &r, CG_PRIME_DEFAULT_MAX_BYTES, warn_line, NULL);
  printf("%016llx%016llx\n", (unsigned long long)h.high64, (unsigned long long)h.low64);
  free(b);
  return rc ? 1 : 0;
}
