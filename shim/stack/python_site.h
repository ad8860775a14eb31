/* The Python line a driver call was made from (python_site.c). */
#ifndef CAPGUARD_PYTHON_SITE_H
#define CAPGUARD_PYTHON_SITE_H

#include <stddef.h>

#define CG_PY_SITE_MAX 256

/* "model_runner.py:1234 in capture": the calling thread's innermost Python
 * frame outside torch's and Triton's own code, "" without Python frames.
 * Never takes the GIL; takes no lock of capguard's but its own. */
void cg_python_site(char *buf, size_t cap);
/* The same for another thread, by its Python thread state
 * (cg_python_this_state, taken on that thread): the thread must be inside
 * a call that keeps it from running Python meanwhile (the hang watcher's
 * waits); read through the interpreter's dump, no cache. */
void cg_python_site_of(void *tstate, char *buf, size_t cap);
/* Fork: the child's lock starts released. */
void cg_python_site_atfork_child(void);

#endif
