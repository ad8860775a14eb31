/* Where libcapguard.so is: $CAPGUARD_SHIM, else the build tree
 * (<dir of capguard>/../shim/), else an install next to the command
 * (<dir>/../lib and <dir>/../lib64 or lib/<multiarch>, any ../lib* directory;
 * the wheel's capguard/bin and capguard/lib are such a pair), else the libdir
 * baked in at build time (CAPGUARD_LIBDIR; none in a wheel). Shared by run
 * and doctor. */
#ifndef CAPGUARD_SHIM_PATH_H
#define CAPGUARD_SHIM_PATH_H

#include <stddef.h>

#define CG_SHIM_NAME "libcapguard.so"

/* Writes the absolute path to buf and returns 0; else -1 with why (one
 * clause, for "capguard run: <why>; ...") in why. */
int cg_find_shim(char *buf, size_t cap, char *why, size_t why_cap);
/* The same; *from (when found) says where it came from, for doctor:
 * "from CAPGUARD_SHIM", "installed with the command", ... */
int cg_find_shim_from(char *buf, size_t cap, char *why, size_t why_cap, const char **from);

/* Directory holding the running capguard executable (from /proc/self/exe). */
int cg_exe_dir(char *buf, size_t cap);

#endif
