/* Whether memory can be read without a fault. cuModuleLoadData & co. take an
 * image without a length, so capguard reads a caller's image only as far as
 * its headers ask, and only after asking the kernel whether those bytes are
 * mapped readable: a bad pointer or a lying header then becomes a reason to
 * leave the image alone, never a SIGSEGV in someone else's process. */
#ifndef CAPGUARD_MEM_PROBE_H
#define CAPGUARD_MEM_PROBE_H

#include <stddef.h>

typedef enum {
  CG_MEM_READABLE = 0,
  CG_MEM_UNREADABLE = 1, /* some byte of the range is not mapped readable */
  CG_MEM_UNKNOWN = 2,    /* the kernel would not say (both ways refused) */
} cg_mem_state;

/* Checks [p, p + n) by copying it through the kernel (process_vm_readv on
 * this process; a pipe where that is refused, e.g. by a seccomp filter),
 * which answers EFAULT instead of raising a signal. Allocates nothing and
 * uses about 5 KiB of stack. Thread-safe. */
cg_mem_state cg_mem_check(const void *p, size_t n);

#endif
