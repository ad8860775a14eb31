/* The entry points' names and wrappers, kept where the loader need not
 * touch them: a table of pointers costs a relocation a row at every
 * process's start-up (about 19 instructions each, 154 rows, two tables:
 * 5.8k of /bin/true's cost, bench/instr_budget.py). The names are one block
 * of characters found by 16-bit offsets, the wrappers are found by 32-bit
 * offsets from their table. */
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

/* The wrappers' places as 32-bit offsets from the table itself, written by
 * the assembler: a switch was compiled by clang into a table of pointers
 * (154 relocations), and gcc could do the same. The shim is linked
 * -Bsymbolic, so the linker resolves each offset; the loader sees none
 * (tests/shim/check_relocations.sh holds the count). */
__asm__(".pushsection .rodata.cg_ep_wrapper_at,\"a\"\n\t"
        ".balign 4\n"
        "cg_ep_wrapper_at:\n"
#define CG_EP_AT(family, name, ...) "\t.long " #name " - cg_ep_wrapper_at\n"
        CG_ENTRY_POINTS(CG_EP_AT)
#undef CG_EP_AT
            "\t.popsection");
extern const int32_t cg_ep_wrapper_at[CG_EP_COUNT] __asm__("cg_ep_wrapper_at")
    __attribute__((visibility("hidden")));

void *cg_ep_wrapper(cg_entry_point ep) {
  if ((unsigned)ep >= CG_EP_COUNT)
    return NULL;
  return (void *)((const char *)cg_ep_wrapper_at + cg_ep_wrapper_at[ep]);
}
