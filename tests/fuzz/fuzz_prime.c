/* libFuzzer target: any bytes as a priming file. Checks the promises of
 * cg_prime_parse_memory (the code cg_prime_load runs): never a crash or an
 * out-of-bounds read (ASan), every record it returns is self-consistent, and
 * cg_prime_find_hashed finds each one by its bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "capguard/prime_file.h"

static void count_line(void *ctx, const char *line) {
  /* Warnings are one line each. */
  if (strchr(line, '\n')) abort();
  ++*(int *)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cg_prime_set *s = NULL;
  int warned = 0;
  if (cg_prime_parse_memory(data, size, "fuzz", &s, count_line, &warned) != 0) {
    if (s || warned != 1) abort(); /* refused: no set, exactly one reason */
    return 0;
  }
  const cg_prime_identity *id = cg_prime_identity_of(s);
  if (id && (strlen(id->program) >= CG_PRIME_PROGRAM_MAX || strlen(id->label) >= CG_PRIME_LABEL_MAX))
    __builtin_trap(); /* an identity's strings end inside it */
  for (size_t i = 0; i < cg_prime_count(s); i++) {
    const cg_prime_record *r = cg_prime_get(s, i);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* that mode accepts any hash */
    XXH128_hash_t h = XXH3_128bits(r->bytes, r->size);
    if (h.high64 != r->hash.hi || h.low64 != r->hash.lo) abort();
#endif
    if (r->size == 0 || r->size > size) abort();
    if (r->names_len > size || r->kind > CG_IMAGE_PTX) abort();
    uint32_t nuls = 0;
    for (uint32_t k = 0; k < r->names_len; k++) nuls += r->kernel_names[k] == 0;
    if (nuls != r->n_kernels) abort();
    const cg_prime_record *f = cg_prime_find_hashed(s, cg_hash_bytes(r->bytes, r->size), r->bytes, r->size, r->options, r->n_options);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    if (f == NULL) abort();
#else
    (void)f;
#endif
  }
  cg_prime_free(s);
  return 0;
}
