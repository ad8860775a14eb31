/* The loader's answer (dladdr) for an address, asked once per address:
 * dladdr scans the whole symbol table of the object holding it (about 350
 * us for an address in torch's libtorch_cuda.so), and the stacks capguard
 * writes name the same few call sites again and again. */
#ifndef CAPGUARD_SYMBOL_CACHE_H
#define CAPGUARD_SYMBOL_CACHE_H

#include <dlfcn.h>
#include <stdbool.h>

/* dladdr(addr, out), answered from the cache when addr was asked before.
 * Takes the loader's lock on a miss: never with capguard's own locks held. */
bool cg_dladdr_cached(const void *addr, Dl_info *out);
/* Fork: the child starts with the lock released. */
void cg_symbol_cache_atfork_child(void);

#endif
