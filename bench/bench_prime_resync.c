/* How long reading a hostile priming file takes: a valid header followed by
 * a record marker every 16 bytes, each claiming an image record that runs to
 * the end of the file (the shape that made resynchronisation quadratic: 17 s
 * for 2 MiB, 71 s for 4 MiB). Parsed with cg_prime_parse_memory, the code
 * cg_prime_load runs on the mapped file.
 * Usage: bench_prime_resync MIB...   Prints "MiB seconds MiB/s" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/clock.h"
#include "capguard/prime_file.h"

static double seconds(void) { return (double)cg_monotonic_ns() / 1e9; }

/* A valid header, taken from a file written by the library itself. */
static void header(unsigned char out[CG_PRIME_HEADER_BYTES]) {
  char path[] = "/tmp/cg-resync-XXXXXX";
  int fd = mkstemp(path);
  static const unsigned char img[] = ".version 8.0\n.target sm_80\n";
  cg_prime_record r = {.kind = CG_IMAGE_PTX, .size = sizeof img, .bytes = img, .hits = 1};
  r.hash = cg_hash_bytes(img, sizeof img);
  remove(path);
  if (fd < 0 || cg_prime_append(path, &r, CG_PRIME_DEFAULT_MAX_BYTES, NULL, NULL)) exit(2);
  FILE *f = fopen(path, "rb");
  if (!f || fread(out, 1, CG_PRIME_HEADER_BYTES, f) != CG_PRIME_HEADER_BYTES) exit(2);
  fclose(f);
  remove(path);
}

static void count(void *ctx, const char *line) {
  (void)line;
  ++*(int *)ctx;
}

int main(int argc, char **argv) {
  unsigned char hdr[CG_PRIME_HEADER_BYTES];
  header(hdr);
  printf("%8s %10s %10s %8s\n", "MiB", "seconds", "MiB/s", "warnings");
  for (int i = 1; i < argc; i++) {
    size_t len = (size_t)atoi(argv[i]) << 20;
    unsigned char *f = calloc(1, len);
    if (!f || len < 64) return 2;
    memcpy(f, hdr, sizeof hdr);
    for (size_t off = CG_PRIME_HEADER_BYTES; off + 48 <= len; off += 16) {
      uint64_t l = (len - off) & ~(uint64_t)7;
      memcpy(f + off, "CGPR\1\0\0\0", 8);
      memcpy(f + off + 8, &l, 8);
    }
    int warned = 0;
    cg_prime_set *s = NULL;
    double t0 = seconds();
    int rc = cg_prime_parse_memory(f, len, "crafted", &s, count, &warned);
    double t = seconds() - t0;
    printf("%8zu %10.3f %10.1f %8d%s\n", len >> 20, t, (double)(len >> 20) / t, warned, rc ? " (refused)" : "");
    cg_prime_free(s);
    free(f);
  }
  return 0;
}
