/* Test-only reader of a priming file: one line per record (what the shim
 * would preload), and with OUTDIR each record's exact bytes as OUTDIR/<i>.bin
 * so that test_priming.py can compare them with the images it loaded.
 * Exit 0, or 1 when the file is refused (the warning is on stderr). */
#include <stdio.h>
#include <string.h>

#include "capguard/prime_file.h"

static void warn(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "%s\n", line);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: prime_dump FILE [OUTDIR]\n");
    return 2;
  }
  cg_prime_set *set;
  if (cg_prime_load(argv[1], &set, warn, NULL))
    return 1;
  printf("count=%zu\n", cg_prime_count(set));
  for (size_t i = 0; i < cg_prime_count(set); i++) {
    const cg_prime_record *r = cg_prime_get(set, i);
    char hash[33];
    cg_hash_format(r->hash, hash);
    printf("record=%zu kind=%s sm=%u size=%llu hits=%llu modules=%u libraries=%u xxh3=%s kernels=", i,
           cg_image_kind_name(r->kind), r->sm_arch, (unsigned long long)r->size, (unsigned long long)r->hits,
           r->module_loads, r->library_loads, hash);
    for (const char *k = r->kernel_names; k < r->kernel_names + r->names_len; k += strlen(k) + 1)
      printf("%s%s", k == r->kernel_names ? "" : ",", k);
    printf("\n");
    if (argc == 3) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%zu.bin", argv[2], i);
      FILE *f = fopen(path, "wb");
      if (!f || fwrite(r->bytes, 1, r->size, f) != r->size || fclose(f)) {
        fprintf(stderr, "prime_dump: cannot write %s\n", path);
        return 2;
      }
    }
  }
  cg_prime_free(set);
  return 0;
}
