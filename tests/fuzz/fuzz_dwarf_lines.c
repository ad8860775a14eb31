/* libFuzzer target for the shim's DWARF line-table reader
 * (cg_dwarf_line_in_memory): the first 8 bytes are the address looked up
 * (little-endian), the rest an ELF object, hostile or not. Promises: never a
 * crash, a read past the object (ASan; the replay runner's guard page) or a
 * hang; an answer is "name:line" (a base name without '/' or control bytes,
 * a colon, decimal digits) NUL-terminated within the buffer, and no answer
 * leaves the buffer "". Every buffer size from 1 is tried on each input, and
 * lookups through an index (the units' ranges kept between lookups, as the
 * shim keeps them) answer as lookups without one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/dwarf_lines.h"

static void check_answer(bool found, const char *buf, size_t cap) {
  size_t n = strnlen(buf, cap);
  if (n >= cap)
    abort(); /* not terminated within the buffer */
  if (!found) {
    if (n != 0)
      abort();
    return;
  }
  const char *colon = strrchr(buf, ':');
  if (!colon || colon == buf || !colon[1])
    abort();
  for (const char *p = buf; p < colon; p++)
    if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f)
      abort();
  for (const char *p = colon + 1; *p; p++)
    if (*p < '0' || *p > '9')
      abort();
  if (colon[1] == '0')
    abort(); /* line 0 (no source line) is no answer */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  uint64_t pc = 0;
  for (int i = 7; i >= 0; i--)
    pc = pc << 8 | data[i];
  size_t n = size - 8;
  unsigned char *elf = malloc(n ? n : 1); /* exactly n bytes: ASan sees any overread */
  if (!elf)
    return 0;
  memcpy(elf, data + 8, n);
  char buf[64];
  for (size_t cap = 1; cap <= sizeof buf; cap = cap < 8 ? cap + 1 : cap * 2) {
    memset(buf, 'Z', sizeof buf);
    check_answer(cg_dwarf_line_in_memory(elf, n, pc, NULL, buf, cap), buf, cap);
  }
  /* Through one index (as the shim looks), addresses around pc in an order
   * that makes later ones go through the ranges kept: each answer the same
   * as without the index. */
  cg_dwarf_index ix = {0};
  static const int64_t around[] = {0, 64, -64, 1, -1, 0, 4096, -4096, 0};
  for (size_t k = 0; k < sizeof around / sizeof around[0]; k++) {
    char plain[64], indexed[64];
    uint64_t at = pc + (uint64_t)around[k];
    bool a = cg_dwarf_line_in_memory(elf, n, at, NULL, plain, sizeof plain);
    bool b = cg_dwarf_line_in_memory(elf, n, at, &ix, indexed, sizeof indexed);
    check_answer(b, indexed, sizeof indexed);
    if (a != b || strcmp(plain, indexed) != 0)
      abort();
  }
  cg_dwarf_index_free(&ix);
  free(elf);
  return 0;
}
