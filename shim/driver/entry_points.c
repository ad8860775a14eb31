/* The entry points' names and wrappers, kept where the loader need not
 * touch them: a table of pointers costs a relocation a row at every
 * process's start-up (about 19 instructions each, 154 rows, two tables:
 * 5.8k of /bin/true's cost, bench/instr_budget.py). The names are one block
 * of characters found by 16-bit offsets, the wrappers' addresses are made
 * by code (each case loads its wrapper's address relative to itself). */
#include "entry_points.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Every name as a field of its own: offsetof gives where each starts, a
 * constant the compiler computes. The fields' names are pasted, so the
 * cuda.h macros that rename entry points (cuMemcpyHtoD to cuMemcpyHtoD_v2)
 * cannot make two rows one field. */
static const struct ep_names {
#define CG_EP_FIELD(family, name, ...) char n_##name[sizeof #name];
  CG_ENTRY_POINTS(CG_EP_FIELD)
#undef CG_EP_FIELD
} names = {
#define CG_EP_TEXT(family, name, ...) #name,
    CG_ENTRY_POINTS(CG_EP_TEXT)
#undef CG_EP_TEXT
};

static const uint16_t name_at[CG_EP_COUNT] = {
#define CG_EP_AT(family, name, ...) offsetof(struct ep_names, n_##name),
    CG_ENTRY_POINTS(CG_EP_AT)
#undef CG_EP_AT
};
_Static_assert(sizeof(struct ep_names) <= UINT16_MAX, "the names outgrew their 16-bit offsets");

const char *cg_ep_name(cg_entry_point ep) { return (const char *)&names + name_at[ep]; }

int cg_ep_find(const char *name) {
  for (int i = 0; i < CG_EP_COUNT; i++)
    if (strcmp(name, cg_ep_name((cg_entry_point)i)) == 0)
      return i;
  return -1;
}

/* The wrappers under the exported names they are defined with (asm labels). */
#define CG_EP_DECL(family, name, ...) extern void cg_w_##name(void) __asm__(#name);
CG_ENTRY_POINTS(CG_EP_DECL)
#undef CG_EP_DECL

/* A switch, not an array: compilers build a table of addresses from a
 * switch only where it needs no relocation (position-independent code
 * gets a jump table of relative offsets), and the shim is linked
 * -Bsymbolic, so each case's address is computed from its own place
 * (tests/shim/check_relocations.sh holds the count). */
void *cg_ep_wrapper(cg_entry_point ep) {
  switch (ep) {
#define CG_EP_WRAP(family, name, ...) \
  case CG_EP_##name:                  \
    return (void *)cg_w_##name;
    CG_ENTRY_POINTS(CG_EP_WRAP)
#undef CG_EP_WRAP
  case CG_EP_COUNT:
    break;
  }
  return NULL;
}
