/* What is wrong with a priming file, said before a command starts the
 * engine: capguard run, prime learn and prime check ask, and capguard doctor
 * --prime FILE says the same. */
#ifndef CAPGUARD_PRIME_PRECHECK_H
#define CAPGUARD_PRIME_PRECHECK_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
  CG_PRECHECK_OK,      /* readable, or not there yet (the first guard run creates it) */
  CG_PRECHECK_MISSING, /* not there */
  CG_PRECHECK_BAD,     /* the shim would not read it: why says what is wrong and what to do */
} cg_precheck;

/* Checks path as the shim would read it (its size against CAPGUARD_PRIME_MAX,
 * its header, its records). why: one phrase ("is not a priming file (bad
 * magic): move it away or pass another --prime"), "" when OK; damaged records
 * that the shim skips are counted in *damaged (may be NULL) and are not BAD. */
cg_precheck cg_prime_precheck(const char *path, char *why, size_t cap, size_t *damaged);

#endif
