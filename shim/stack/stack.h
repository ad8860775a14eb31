/* Stack capture for the shim: where the calling thread is, natively and in
 * Python. Runs inside a CUDA driver call of someone else's process, possibly on
 * a thread that released the GIL: never takes the GIL, bounded in time and
 * memory (no heap use after cg_stack_init, save the dynamic loader's own
 * when a lazy Python lookup runs), and degrades to "no frames".
 * Lock order: backtrace() and dladdr() take the dynamic loader's lock, so
 * call these without holding capguard's own locks (a thread inside dlopen
 * holds the loader's lock and may enter the shim from a constructor). */
#ifndef CAPGUARD_STACK_H
#define CAPGUARD_STACK_H

#include <stddef.h>

#include "capguard/event.h"   /* cg_py_frame {const char *file; int line; const char *func;} */

/* Dependency: the real dlsym (the shim interposes dlsym). The shim defines it;
 * while it is NULL the Python lookup finds nothing. */
extern void *(*cg_real_dlsym)(void *, const char *);

/* Call once early (the shim's constructor): resolves what is needed and warms up
 * glibc's backtrace() (its first call dlopens libgcc_s and allocates). */
void cg_stack_init(void);
/* The calling thread's native stack, innermost first, skipping `skip` frames of
 * capguard itself. Each frame symbolized with dladdr as "libfoo.so(func+0x1a) [0x7f..]"
 * or "libfoo.so+0x1234 [0x7f..]" when no symbol; strings live in buf. Returns frames written. */
size_t cg_native_stack(int skip, const char **out, size_t max, char *buf, size_t bufcap);
/* The calling thread's Python stack, innermost first, when the process runs CPython
 * and this thread has a Python thread state; 0 otherwise. Strings live in buf. */
size_t cg_python_stack(cg_py_frame *out, size_t max, char *buf, size_t bufcap);
/* The first of n return addresses saved earlier (backtrace(), innermost
 * first) outside capguard's own object, libcuda and libcudart, as
 * "libfoo.so(func+0x1a)" without the address; "" and 0 when there is none.
 * Returns length. */
size_t cg_native_where_frames(void *const *frames, size_t n, char *buf, size_t cap);

#endif
