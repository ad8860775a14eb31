/* The loader's answer (dladdr) for an address, asked once per address:
 * dladdr scans the whole symbol table of the object holding it (about 350
 * us for an address in torch's libtorch_cuda.so), and the stacks capguard
 * writes name the same few call sites again and again. */
#ifndef CAPGUARD_SYMBOL_CACHE_H
#define CAPGUARD_SYMBOL_CACHE_H

#include <stdbool.h>
#include <stdint.h>

/* What dladdr said of an address: its object's base name and load
 * address, the nearest symbol and its address (sym NULL when none). The
 * names point into the struct itself (copies: the loader's own strings go
 * when a library is unloaded) or, on a first lookup, into the loader's
 * strings, valid until the caller returns. */
typedef struct {
  const char *file;
  const char *sym;
  uintptr_t base, sym_addr;
  char file_buf[96];
  char sym_buf[256];
} cg_symbol;

/* dladdr(addr), answered from the cache when addr was asked before. False
 * when the loader knows no object there. Takes the loader's lock on a
 * miss: never with capguard's own locks held. */
bool cg_symbol_of(const void *addr, cg_symbol *out);
/* Fork: the child starts with the lock released. */
void cg_symbol_cache_atfork_child(void);

#endif
