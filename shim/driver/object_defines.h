/* Whether a loaded object defines a symbol, read from its own tables: no
 * call into the loader. */
#ifndef CAPGUARD_OBJECT_DEFINES_H
#define CAPGUARD_OBJECT_DEFINES_H

#include <link.h>
#include <stdint.h>

typedef enum { CG_DEFINES_NO, CG_DEFINES_YES, CG_DEFINES_UNKNOWN } cg_defines;

/* A name's hash in GNU hash tables, computed once for many objects. */
uint32_t cg_symbol_hash(const char *name);

/* Whether the object m (the loader's entry) defines name (whose hash is
 * hash), from its GNU hash table; CG_DEFINES_UNKNOWN when the object has
 * none to read. */
cg_defines cg_object_defines(const struct link_map *m, const char *name, uint32_t hash);

/* The loader's list of loaded objects, in load order: the debuggers'
 * interface, which the program's DT_DEBUG entry points at, found from the
 * program's headers (getauxval). NULL where the program has none. */
const struct link_map *cg_loaded_objects(void);

#endif
