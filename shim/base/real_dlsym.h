/* glibc's own dlsym. capguard exports a dlsym of its own (see dlsym_hook.S),
 * so any lookup capguard makes for itself must go through this pointer. */
#ifndef CAPGUARD_REAL_DLSYM_H
#define CAPGUARD_REAL_DLSYM_H

extern void *(*cg_real_dlsym)(void *handle, const char *name);

/* Resolve cg_real_dlsym without going through any dlsym (dlvsym with the
 * symbol versions glibc has used: GLIBC_2.34 and the original one). Safe to
 * call more than once. Returns 0, or -1 if glibc's dlsym cannot be found. */
int cg_real_dlsym_resolve(void);

#endif
