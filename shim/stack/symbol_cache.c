/* Direct-mapped and bounded (a collision replaces the older answer). An
 * entry keeps copies of the names, not the loader's pointers, which a
 * dlclose frees; a name too long for an entry is not kept (dladdr is asked
 * each time). An address whose library was unloaded and another loaded in
 * its place keeps its first answer: libraries that call the driver are not
 * unloaded while they run, as cg_native_where_frames already assumes. The
 * lock is never held across dladdr. */
#include "locks.h"
#include "symbol_cache.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#define CG_SYMBOL_ENTRIES 512

typedef struct {
  const void *addr; /* NULL: empty */
  bool found, has_sym;
  uintptr_t base, sym_addr;
  char file[96];
  char sym[256];
} symbol_entry;

static symbol_entry kept[CG_SYMBOL_ENTRIES];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static symbol_entry *slot_of(const void *addr) {
  uint64_t h = (uint64_t)(uintptr_t)addr * 0x9e3779b97f4a7c15ull;
  return &kept[(h >> 40) % CG_SYMBOL_ENTRIES];
}

static const char *base_name(const char *path) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  return slash ? slash + 1 : path;
}

/* src copied into dst (cap bytes) when it fits whole. */
static bool copy_whole(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap)
    return false;
  memcpy(dst, src, n + 1);
  return true;
}

bool cg_symbol_of(const void *addr, cg_symbol *out) {
  symbol_entry *e = slot_of(addr);
  cg_lock(&kept_lock);
  bool hit = addr && e->addr == addr, found = e->found;
  if (hit && found) {
    memcpy(out->file_buf, e->file, sizeof out->file_buf);
    memcpy(out->sym_buf, e->sym, sizeof out->sym_buf);
    out->file = out->file_buf;
    out->sym = e->has_sym ? out->sym_buf : NULL;
    out->base = e->base;
    out->sym_addr = e->sym_addr;
  }
  cg_unlock(&kept_lock);
  if (hit)
    return found;
  Dl_info info;
  found = dladdr(addr, &info) != 0 && info.dli_fname;
  if (found) {
    out->file = base_name(info.dli_fname);
    out->sym = info.dli_sname && info.dli_saddr ? info.dli_sname : NULL;
    out->base = (uintptr_t)info.dli_fbase;
    out->sym_addr = (uintptr_t)info.dli_saddr;
  }
  symbol_entry fresh = {.addr = addr, .found = found};
  if (found) {
    fresh.has_sym = out->sym != NULL;
    fresh.base = out->base;
    fresh.sym_addr = out->sym_addr;
    if (!copy_whole(fresh.file, sizeof fresh.file, out->file) ||
        (out->sym && !copy_whole(fresh.sym, sizeof fresh.sym, out->sym)))
      return true; /* too long to keep: asked again next time */
  }
  cg_lock(&kept_lock);
  *e = fresh;
  cg_unlock(&kept_lock);
  return found;
}

void cg_symbol_cache_atfork_child(void) { pthread_mutex_init(&kept_lock, NULL); }
