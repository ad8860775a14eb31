/* Reading a loaded object's dynamic symbols as the loader does (its GNU
 * hash table: a Bloom filter, buckets and chains), for one question asked
 * at start-up: whether an object before this copy of the shim defines a
 * name (other_copy.c). A lookup through glibc (dlopen, dlsym and glibc's
 * dlsym found by dlvsym) cost every process's start-up 5.4k instructions;
 * this reads a few words of each object loaded before the shim. */
#include "object_defines.h"

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/auxv.h>

/* The loader rewrites a writable dynamic section's addresses to where the
 * object lies; a read-only one (the vDSO's) keeps them relative to its
 * base. An object's own addresses start near 0, far below its base (a
 * prelinked object moved from its chosen base would break this; glibc no
 * longer honours prelinking from 2.36). */
static const void *place(const struct link_map *m, ElfW(Addr) a) {
  return (const void *)(a < m->l_addr ? a + m->l_addr : a);
}

uint32_t cg_symbol_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++)
    h = h * 33 + (unsigned char)*s;
  return h;
}

static bool same(const char *a, const char *b) {
  while (*a && *a == *b)
    a++, b++;
  return *a == *b;
}

cg_defines cg_object_defines(const struct link_map *m, const char *name, uint32_t h) {
  const uint32_t *table = NULL;
  const ElfW(Sym) *syms = NULL;
  const char *strs = NULL;
  for (const ElfW(Dyn) *d = m->l_ld; d && d->d_tag != DT_NULL && !(table && syms && strs); d++) {
    if (d->d_tag == DT_GNU_HASH)
      table = place(m, d->d_un.d_ptr);
    else if (d->d_tag == DT_SYMTAB)
      syms = place(m, d->d_un.d_ptr);
    else if (d->d_tag == DT_STRTAB)
      strs = place(m, d->d_un.d_ptr);
  }
  if (!table || !syms || !strs || !table[0] || !table[2])
    return CG_DEFINES_UNKNOWN;
  uint32_t n_buckets = table[0], first = table[1], n_words = table[2], shift = table[3];
  const ElfW(Addr) *bloom = (const ElfW(Addr) *)(table + 4);
  const uint32_t *buckets = (const uint32_t *)(bloom + n_words), *chain = buckets + n_buckets;
  const unsigned bits = sizeof(ElfW(Addr)) * 8;
  ElfW(Addr) word = bloom[(h / bits) % n_words];
  if (!((word >> (h % bits)) & (word >> ((h >> shift) % bits)) & 1))
    return CG_DEFINES_NO;
  for (uint32_t i = buckets[h % n_buckets]; i >= first; i++) {
    uint32_t hi = chain[i - first];
    if ((hi | 1) == (h | 1) && syms[i].st_shndx != SHN_UNDEF && same(strs + syms[i].st_name, name))
      return CG_DEFINES_YES;
    if (hi & 1)
      break;
  }
  return CG_DEFINES_NO;
}

const struct link_map *cg_loaded_objects(void) {
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
  size_t n = getauxval(AT_PHNUM);
  uintptr_t bias = 0;
  const ElfW(Dyn) *dyn = NULL;
  ElfW(Addr) dyn_at = 0;
  for (size_t i = 0; ph && i < n; i++) {
    if (ph[i].p_type == PT_PHDR)
      bias = (uintptr_t)ph - ph[i].p_vaddr;
    else if (ph[i].p_type == PT_DYNAMIC)
      dyn_at = ph[i].p_vaddr;
  }
  if (dyn_at)
    dyn = (const ElfW(Dyn) *)(bias + dyn_at);
  for (; dyn && dyn->d_tag != DT_NULL; dyn++)
    if (dyn->d_tag == DT_DEBUG)
      return dyn->d_un.d_ptr ? ((const struct r_debug *)dyn->d_un.d_ptr)->r_map : NULL;
  return NULL;
}
