/* The function of an ELF object that holds an address, from its symbol
 * table (.symtab): the name of a frame in a function the object does not
 * export, which the loader (dladdr) cannot name, e.g. a C++ method of an
 * executable built without -rdynamic. With libc alone, for the shim: the
 * object is read with pread (never mapped: a file may shrink under a mapping),
 * and at most CG_ELF_SYMTAB_MAX bytes of symbols are read for one lookup.
 * Anything it does not read (32-bit or big-endian ELF, no .symtab: a
 * stripped object) is "no answer", never a crash. */
#ifndef CAPGUARD_ELF_SYMBOLS_H
#define CAPGUARD_ELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CG_ELF_SYMTAB_MAX (32u << 20)

/* pc: an address as the object was linked (a run-time address minus the
 * load bias). On success writes the symbol's name (as the table has it:
 * mangled) into name, its address as linked into *start, and returns true. */
bool cg_elf_function_of(const char *path, uint64_t pc, char *name, size_t cap, uint64_t *start);

#endif
