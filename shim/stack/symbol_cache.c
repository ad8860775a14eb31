/* Direct-mapped and bounded (a collision replaces the older answer). An
 * answer is the loader's pointers (file and symbol names, addresses), valid
 * for as long as the object at that address stays loaded: libraries that
 * call the driver are not unloaded while they run, as cg_native_where_frames
 * already assumes. The lock is never held across dladdr. */
#include "symbol_cache.h"

#include <pthread.h>
#include <stdint.h>

#define CG_SYMBOL_ENTRIES 2048

typedef struct {
  const void *addr; /* NULL: empty */
  bool found;
  Dl_info info;
} symbol_entry;

static symbol_entry kept[CG_SYMBOL_ENTRIES];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static symbol_entry *slot_of(const void *addr) {
  uint64_t h = (uint64_t)(uintptr_t)addr * 0x9e3779b97f4a7c15ull;
  return &kept[(h >> 40) % CG_SYMBOL_ENTRIES];
}

bool cg_dladdr_cached(const void *addr, Dl_info *out) {
  symbol_entry *e = slot_of(addr);
  pthread_mutex_lock(&kept_lock);
  bool hit = addr && e->addr == addr, found = e->found;
  if (hit)
    *out = e->info;
  pthread_mutex_unlock(&kept_lock);
  if (hit)
    return found;
  found = dladdr(addr, out) != 0;
  pthread_mutex_lock(&kept_lock);
  e->addr = addr;
  e->found = found;
  if (found)
    e->info = *out;
  pthread_mutex_unlock(&kept_lock);
  return found;
}

void cg_symbol_cache_atfork_child(void) { pthread_mutex_init(&kept_lock, NULL); }
