/* detect/image/elf_symbols.c: the function of an address from an object's symbol
 * table, for a frame the loader cannot name (a function the object does not
 * export). A static function of this very program is found by its address
 * as linked; hostile files (not ELF, cut short, section headers or symbol
 * table past the end, a directory, a FIFO) are no answer, never a crash. */
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capguard/elf_symbols.h"
#include "check_run.h"

__attribute__((noinline)) static int not_exported_marker(int x) { return x * 3 + 1; }

/* this program's load bias (l_addr), from the loader */
static uintptr_t load_bias(void) {
  Dl_info info;
  struct link_map *lm = NULL;
  ck_assert(dladdr1((void *)&load_bias, &info, (void **)&lm, RTLD_DL_LINKMAP));
  ck_assert_ptr_nonnull(lm);
  return lm->l_addr;
}

START_TEST(static_function_named) {
  uintptr_t at = (uintptr_t)&not_exported_marker - load_bias();
  char name[128];
  uint64_t start = 0;
  ck_assert(cg_elf_function_of("/proc/self/exe", at + 4, name, sizeof name, &start));
  ck_assert_str_eq(name, "not_exported_marker");
  ck_assert_uint_eq(start, at);
  ck_assert_int_eq(not_exported_marker(1), 4);
  /* a name longer than the buffer is cut, still a string */
  char small[8];
  ck_assert(cg_elf_function_of("/proc/self/exe", at, small, sizeof small, &start));
  ck_assert_str_eq(small, "not_exp");
  /* an address in no function */
  ck_assert(!cg_elf_function_of("/proc/self/exe", 1, name, sizeof name, &start));
}
END_TEST

static char path[64];
static void write_bytes(const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(p, 1, n, f), n);
  fclose(f);
}

START_TEST(hostile_files_no_answer) {
  char name[64];
  uint64_t start;
  snprintf(path, sizeof path, "/tmp/cg-elf-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  write_bytes("#!/bin/sh\necho hi\n", 18);
  ck_assert(!cg_elf_function_of(path, 0x1000, name, sizeof name, &start));
  /* this program's own header, then cut short, then lying about its sections */
  FILE *self = fopen("/proc/self/exe", "rb");
  ck_assert_ptr_nonnull(self);
  static unsigned char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, self);
  fclose(self);
  ck_assert_uint_ge(n, sizeof(Elf64_Ehdr));
  write_bytes(buf, sizeof(Elf64_Ehdr));
  ck_assert(!cg_elf_function_of(path, 0x1000, name, sizeof name, &start));
  Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
  eh->e_shoff = (Elf64_Off)-64;
  write_bytes(buf, n);
  ck_assert(!cg_elf_function_of(path, 0x1000, name, sizeof name, &start));
  eh->e_shoff = 64;
  eh->e_shnum = 0xffff;
  write_bytes(buf, n);
  ck_assert(!cg_elf_function_of(path, 0x1000, name, sizeof name, &start));
  /* one section, a symbol table that runs past the file's end */
  memset(buf + 64, 0, 2 * sizeof(Elf64_Shdr));
  eh->e_shnum = 2;
  Elf64_Shdr *sh = (Elf64_Shdr *)(buf + 64);
  sh[1] = (Elf64_Shdr){.sh_type = SHT_SYMTAB, .sh_entsize = sizeof(Elf64_Sym), .sh_link = 0,
                       .sh_offset = 256, .sh_size = (Elf64_Xword)1 << 40};
  write_bytes(buf, 512);
  ck_assert(!cg_elf_function_of(path, 0x1000, name, sizeof name, &start));
  unlink(path);
  ck_assert(!cg_elf_function_of(path, 0x1000, name, sizeof name, &start)); /* gone */
  ck_assert(!cg_elf_function_of("/tmp", 0x1000, name, sizeof name, &start)); /* a directory */
  ck_assert_int_eq(mkfifo(path, 0600), 0); /* a FIFO never blocks the open */
  ck_assert(!cg_elf_function_of(path, 0x1000, name, sizeof name, &start));
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("elf_symbols");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, static_function_named);
  tcase_add_test(tc, hostile_files_no_answer);
  suite_add_tcase(s, tc);
  return tk_check_run(s);
}
