/* Replay runner for a libFuzzer target without libFuzzer: runs the target on
 * every file of a seed corpus and on deterministic pseudo-random mutations of
 * each (bit flips, truncations, header field overwrites, splices). Each input
 * is placed so that it ends at a PROT_NONE page: an overread crashes even in a
 * build without sanitizers. Usage: replay CORPUS_DIR [MUTATIONS_PER_SEED]. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every input ends right before a PROT_NONE page (targets may rely on it). */
int cg_fuzz_input_at_guard = 1;

#define REPLAY_MAX_INPUT ((size_t)1 << 20)

static uint64_t rng_state;
static uint64_t rng(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static unsigned char *guard_end; /* first byte of the PROT_NONE page */

static void run_one(const unsigned char *src, size_t n) {
  unsigned char *p = guard_end - n;
  memcpy(p, src, n);
  LLVMFuzzerTestOneInput(p, n);
}

/* Values that make offsets and sizes interesting: zero, ones, the edges of
 * each width, and values near the input size. */
static uint64_t interesting(size_t n) {
  static const uint64_t v[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0xffffffff,
                               0x7fffffffffffffffull, 0xffffffffffffffffull, 0xfffffffffffffff0ull};
  uint64_t r = rng() % 16;
  if (r < sizeof v / sizeof v[0]) return v[r];
  return (uint64_t)n + (rng() % 65) - 32;
}

static void mutate(unsigned char *m, size_t *n, const unsigned char *seed, size_t seed_n) {
  memcpy(m, seed, seed_n);
  *n = seed_n;
  int steps = 1 + (int)(rng() % 4);
  for (int s = 0; s < steps && *n > 0; s++) {
    /* header fields live in the first bytes: aim there half of the time */
    size_t span = rng() % 2 ? (*n < 256 ? *n : 256) : *n;
    size_t at = (size_t)(rng() % span);
    switch (rng() % 5) {
    case 0: m[at] ^= (unsigned char)(1u << (rng() % 8)); break; /* bit flip */
    case 1: m[at] = (unsigned char)rng(); break;
    case 2: { /* field overwrite, 2/4/8 bytes little endian */
      int w = 2 << (rng() % 3);
      uint64_t v = interesting(*n);
      for (int i = 0; i < w && at + (size_t)i < *n; i++) m[at + (size_t)i] = (unsigned char)(v >> (8 * i));
      break;
    }
    case 3: *n = (size_t)(rng() % *n); break; /* truncation */
    case 4: { /* copy a chunk of the seed elsewhere */
      size_t from = (size_t)(rng() % seed_n), len = 1 + (size_t)(rng() % 64);
      if (from + len > seed_n) len = seed_n - from;
      if (at + len > *n) len = *n - at;
      memmove(m + at, seed + from, len);
      break;
    }
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS_PER_SEED]\n", argv[0]);
    return 2;
  }
  long per_seed = argc > 2 ? strtol(argv[2], NULL, 10) : 3000;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *map = mmap(NULL, REPLAY_MAX_INPUT + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *seed = malloc(REPLAY_MAX_INPUT), *m = malloc(REPLAY_MAX_INPUT);
  if (map == MAP_FAILED || !seed || !m || mprotect(map + REPLAY_MAX_INPUT, page, PROT_NONE) != 0) {
    perror("replay: setup");
    return 2;
  }
  guard_end = map + REPLAY_MAX_INPUT;
  DIR *d = opendir(argv[1]);
  if (!d) {
    fprintf(stderr, "replay: cannot open corpus %s\n", argv[1]);
    free(m);
    free(seed);
    return 2;
  }
  long seeds = 0, runs = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t n = fread(seed, 1, REPLAY_MAX_INPUT, f);
    fclose(f);
    /* seeded by the name, so a failure replays the same way every time */
    rng_state = 1469598103934665603ull;
    for (const char *c = e->d_name; *c; c++) rng_state = (rng_state ^ (unsigned char)*c) * 1099511628211ull;
    run_one(seed, n);
    runs++;
    for (long i = 0; i < per_seed; i++) {
      size_t mn;
      mutate(m, &mn, seed, n);
      run_one(m, mn);
      runs++;
    }
    seeds++;
  }
  closedir(d);
  free(m);
  free(seed);
  munmap(map, REPLAY_MAX_INPUT + page);
  printf("replay: %ld seeds, %ld inputs, no failure\n", seeds, runs);
  return seeds > 0 ? 0 : 1;
}
