/* A kernel name shortened to the room a sentence has for it: its start and
 * "...". Torch's mangled names run to hundreds of characters; a list with no
 * room for its first name would otherwise read as an image without names. */
#ifndef CAPGUARD_NAME_CUT_H
#define CAPGUARD_NAME_CUT_H

#include <stddef.h>

/* Writes name, or as much of its start as fits with "..." after it, and a
 * NUL into buf[0, cap); returns the length written (0 when cap < 8: no
 * useful start fits). */
size_t cg_name_cut(char *buf, size_t cap, const char *name);

#endif
