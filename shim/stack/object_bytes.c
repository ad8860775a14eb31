#include "object_bytes.h"
#include "loader_gate.h"

#include <link.h>
#include <string.h>

typedef struct {
  uintptr_t lo, hi;
  char *path;
  size_t cap;
  uint64_t offset;
  bool found;
} bytes_search;

static int holds(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  bytes_search *b = data;
  const char *name = info->dlpi_name;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t seg = info->dlpi_addr + ph->p_vaddr;
    /* the file's bytes: p_filesz (past it, zero-filled memory of no file) */
    if (b->lo < seg || b->hi > seg + ph->p_filesz)
      continue;
    /* the main program's name is "" here: it is not looked for */
    size_t n = name ? strlen(name) : 0;
    if (n && name[0] == '/' && n < b->cap) {
      memcpy(b->path, name, n + 1); /* copied here: the loader's name lives only while the object does */
      b->offset = ph->p_offset + (b->lo - seg);
      b->found = true;
    }
    return 1;
  }
  return 0;
}

bool cg_object_bytes(const void *p, size_t size, char *path, size_t cap, uint64_t *offset) {
  if (!p || !size || !path || !cap || (uintptr_t)p + size < (uintptr_t)p)
    return false;
  bytes_search b = {(uintptr_t)p, (uintptr_t)p + size, path, cap, 0, false};
  cg_dl_iterate_phdr(holds, &b);
  if (b.found)
    *offset = b.offset;
  return b.found;
}
