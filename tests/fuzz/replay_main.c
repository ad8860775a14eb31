/* Stand-in for the shared replay runner (another part owns the real one):
 * feeds every file under the corpus directory given as argv[1] to
 * LLVMFuzzerTestOneInput, then deterministic mutations of each (every
 * truncation length up to 4 KiB, single-byte flips) so that a plain
 * `meson test` exercises the target without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
  *n = b ? fread(b, 1, (size_t)(len > 0 ? len : 0), f) : 0;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
    return 2;
  }
  DIR *d = opendir(argv[1]);
  if (!d) {
    perror(argv[1]);
    return 1;
  }
  unsigned files = 0, runs = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", argv[1], e->d_name);
    size_t n;
    uint8_t *b = slurp(p, &n);
    if (!b) continue;
    files++;
    LLVMFuzzerTestOneInput(b, n), runs++;
    for (size_t cut = 0; cut < n && cut < 4096; cut++) {
      uint8_t *t = malloc(cut ? cut : 1); /* exact size, so ASan sees any overread */
      memcpy(t, b, cut);
      LLVMFuzzerTestOneInput(t, cut), runs++;
      free(t);
    }
    uint8_t *m = malloc(n ? n : 1);
    for (size_t i = 0; i < n && i < 4096; i++) {
      memcpy(m, b, n);
      m[i] ^= (uint8_t)(1u << (i % 8));
      LLVMFuzzerTestOneInput(m, n), runs++;
    }
    free(m);
    free(b);
  }
  closedir(d);
  printf("%u corpus files, %u runs\n", files, runs);
  return files ? 0 : 1;
}
