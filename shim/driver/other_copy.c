/* Finding another copy of capguard ahead of this one. Both copies' constructors
 * run, in an order the loader chooses; without this each wrote a start record
 * and a summary, and the log counted one process twice.
 *
 * The copy whose symbols the process binds to is the first in lookup order:
 * the global scope (the main program's search list, LD_PRELOAD's objects
 * right after the program) finds its dlsym and its cuStreamBeginCapture.
 * One object that defines both is a capguard (libc defines no cu*, libcuda
 * no dlsym); when that object is not this one, this copy is the second.
 *
 * The lookup goes through the main program's handle, not RTLD_DEFAULT: the
 * shim is linked -Bsymbolic (DT_SYMBOLIC), and glibc puts such an object
 * itself first in its own scope, so RTLD_DEFAULT asked from inside any copy
 * finds that copy's dlsym first, and every copy took itself for the first.
 *
 * That lookup, with glibc's dlsym found first, cost every process's start-up
 * 5.4k instructions; it is made only when an object loaded before this copy
 * may define cuStreamBeginCapture (first_by_load_order, object_defines.c),
 * which in a process with one copy none does. */
#include "other_copy.h"
#include "loader_gate.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "object_defines.h"
#include "real_dlsym.h"

/* Which loaded object holds each address: its place in the loader's list,
 * counted from 1 (0: none). One walk of the list's segments for all three;
 * dladdr, which also looks for the nearest symbol through the object's
 * whole symbol table, cost /bin/true 17.8k instructions for the three. */
enum { N_ADDRS = 3 };
typedef struct {
  uintptr_t addr[N_ADDRS];
  size_t object[N_ADDRS];
  size_t at;
} objects_of;

static int find_objects(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  objects_of *o = data;
  o->at++;
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    for (int a = 0; a < N_ADDRS; a++)
      if (!o->object[a] && o->addr[a] >= lo && o->addr[a] < hi)
        o->object[a] = o->at;
  }
  return 0;
}

/* The usual case, answered with no lookup: no object loaded before this
 * copy defines cuStreamBeginCapture, so none before it in lookup order is a
 * capguard (the program's search list is in load order: the program,
 * LD_PRELOAD's objects, their needs, then later loads). An object whose
 * symbols cannot be read sends the question to the full lookup. */
static bool first_by_load_order(void) {
  extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden"))); /* this copy's, from the linker */
  static const char name[] = "cuStreamBeginCapture";
  uint32_t hash = cg_symbol_hash(name);
  for (const struct link_map *m = cg_loaded_objects(); m; m = m->l_next) {
    if (m->l_ld == _DYNAMIC)
      return true;
    if (cg_object_defines(m, name, hash) != CG_DEFINES_NO)
      return false;
  }
  return false;
}

bool cg_other_copy_first(void) {
  if (first_by_load_order())
    return false;
  if (cg_real_dlsym_resolve())
    return false;
  /* The main program's handle: no file opened, the loaded program's map.
   * Never closed: the program is never unloaded, so the count it holds
   * changes nothing, and dlclose's first call costs 1.2k instructions. */
  void *global = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
  if (!global)
    return false;
  /* The usual case, this copy's dlsym the first, is answered by the first
   * lookup: the second is made only when another object's dlsym comes first. */
  objects_of o = {
      {(uintptr_t)&cg_other_copy_first, (uintptr_t)cg_real_dlsym(global, "dlsym"), 0}, {0, 0, 0}, 0};
  /* This copy's own dlsym, by address: first, and no walk of the objects
   * (dl_iterate_phdr's first call and the walk cost every process's
   * start-up about 3k instructions). */
  if (o.addr[1] == (uintptr_t)&dlsym)
    return false;
  if (o.addr[1])
    cg_dl_iterate_phdr(find_objects, &o);
  if (o.object[0] && o.object[1] && o.object[0] != o.object[1] &&
      (o.addr[2] = (uintptr_t)cg_real_dlsym(global, "cuStreamBeginCapture"))) {
    o.at = 0; /* a second walk, for that one only */
    cg_dl_iterate_phdr(find_objects, &o);
  }
  size_t self = o.object[0], by_dlsym = o.object[1], by_capture = o.object[2];
  return self && by_dlsym && by_dlsym == by_capture && by_dlsym != self;
}
