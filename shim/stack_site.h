#ifndef CAPGUARD_STACK_SITE_H
#define CAPGUARD_STACK_SITE_H
#include <stddef.h>
/* The first of n saved return addresses outside capguard and the CUDA
 * libraries, symbolized into buf; 0 and "" when there is none. */
size_t cg_stack_symbolize_first_foreign(void *const *frames, size_t n, char *buf, size_t cap);
#endif
