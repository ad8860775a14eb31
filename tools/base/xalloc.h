/* Allocation that ends the command with one line instead of crashing: a log
 * too large for memory is a usage problem, not a fault. One implementation
 * for every floor of the command; each caller says what it was doing. */
#ifndef CAPGUARD_XALLOC_H
#define CAPGUARD_XALLOC_H

#include <stddef.h>

/* "capguard: out of memory DOING" on stderr, then exit status 2. */
_Noreturn void cg_out_of_memory(const char *doing);
/* realloc(p, n) (n 0 counts as 1), or cg_out_of_memory(doing). */
void *cg_xrealloc(void *p, size_t n, const char *doing);

#endif
