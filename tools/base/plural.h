/* The plural endings of the command's counts ("1 capture", "2 captures",
 * "1 process", "3 processes"). */
#ifndef CAPGUARD_PLURAL_H
#define CAPGUARD_PLURAL_H

static inline const char *cg_plural(unsigned long long n) { return n == 1 ? "" : "s"; }
static inline const char *cg_plural_es(unsigned long long n) { return n == 1 ? "" : "es"; }

#endif
