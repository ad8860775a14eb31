/* Paths capguard keeps for the process's life (the priming file, the log
 * for reopening) are made absolute at start: a program may chdir() later,
 * and a relative path would then name another file. */
#ifndef CAPGUARD_ABSOLUTE_PATH_H
#define CAPGUARD_ABSOLUTE_PATH_H

#include <stddef.h>

/* path (cap bytes) prefixed with the working directory when relative. 0,
 * or -1 with path unchanged (no working directory, or too long). */
int cg_path_absolute(char *path, size_t cap);

#endif
