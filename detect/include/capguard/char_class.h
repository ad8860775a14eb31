/* The one test of a character a terminal or a pasted command would act on:
 * C0 controls and DEL. Every text capguard shows from outside (argv, kernel
 * names, paths, labels) is cleaned with it. */
#ifndef CAPGUARD_CHAR_CLASS_H
#define CAPGUARD_CHAR_CLASS_H

#include <stdbool.h>

static inline bool cg_is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

#endif
