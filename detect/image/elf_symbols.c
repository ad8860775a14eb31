#include "capguard/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SECTIONS 4096
#define CHUNK_SYMS 2048 /* symbols read at a time: 48 KiB */

static bool read_at(int fd, void *buf, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
    if (r <= 0)
      return false;
    got += (size_t)r;
  }
  return true;
}

/* .symtab's section header and its string table's; false when there is none. */
static bool find_symtab(int fd, uint64_t size, Elf64_Shdr *symtab, Elf64_Shdr *strtab) {
  Elf64_Ehdr eh;
  if (!read_at(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > MAX_SECTIONS ||
      eh.e_shoff > size || (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff)
    return false;
  Elf64_Shdr *sh = malloc((size_t)eh.e_shnum * sizeof *sh);
  bool found = false;
  if (sh && read_at(fd, sh, (size_t)eh.e_shnum * sizeof *sh, eh.e_shoff)) {
    for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_entsize != sizeof(Elf64_Sym) || sh[i].sh_link >= eh.e_shnum)
        continue;
      *symtab = sh[i];
      *strtab = sh[sh[i].sh_link];
      found = symtab->sh_offset <= size && symtab->sh_size <= size - symtab->sh_offset &&
              strtab->sh_offset <= size && strtab->sh_size <= size - strtab->sh_offset;
    }
  }
  free(sh);
  return found;
}

/* The function symbol whose [value, value + size) holds pc; false if none. */
static bool find_function(int fd, const Elf64_Shdr *symtab, uint64_t pc, Elf64_Sym *out) {
  Elf64_Sym *chunk = malloc(CHUNK_SYMS * sizeof *chunk);
  if (!chunk)
    return false;
  uint64_t n = symtab->sh_size / sizeof(Elf64_Sym);
  if (n * sizeof(Elf64_Sym) > CG_ELF_SYMTAB_MAX)
    n = CG_ELF_SYMTAB_MAX / sizeof(Elf64_Sym);
  bool found = false;
  for (uint64_t at = 0; at < n && !found; at += CHUNK_SYMS) {
    size_t k = n - at < CHUNK_SYMS ? (size_t)(n - at) : CHUNK_SYMS;
    if (!read_at(fd, chunk, k * sizeof *chunk, symtab->sh_offset + at * sizeof *chunk))
      break;
    for (size_t i = 0; i < k && !found; i++) {
      const Elf64_Sym *s = &chunk[i];
      if (ELF64_ST_TYPE(s->st_info) == STT_FUNC && s->st_shndx != SHN_UNDEF && s->st_size &&
          pc >= s->st_value && pc - s->st_value < s->st_size) {
        *out = *s;
        found = true;
      }
    }
  }
  free(chunk);
  return found;
}

bool cg_elf_function_of(const char *path, uint64_t pc, char *name, size_t cap, uint64_t *start) {
  if (!cap)
    return false;
  name[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return false;
  struct stat st;
  Elf64_Shdr symtab, strtab;
  Elf64_Sym sym;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && find_symtab(fd, (uint64_t)st.st_size, &symtab, &strtab) &&
            find_function(fd, &symtab, pc, &sym) && sym.st_name < strtab.sh_size;
  if (ok) {
    uint64_t left = strtab.sh_size - sym.st_name;
    size_t n = left < cap - 1 ? (size_t)left : cap - 1;
    /* the name ends at its NUL, or is cut at cap */
    ok = read_at(fd, name, n, strtab.sh_offset + sym.st_name);
    name[ok ? n : 0] = '\0';
    ok = ok && name[0];
    *start = sym.st_value;
  }
  close(fd);
  return ok;
}
