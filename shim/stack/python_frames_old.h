/* CPython 3.9 and 3.10: the calling thread's frames read in place.
 *
 * Their _Py_DumpTraceback takes a reference to each frame's code object
 * (PyFrame_GetCode, then Py_DECREF: plain increments). capguard calls it
 * without the GIL (a driver call made from ctypes or from torch, which
 * release it), so those increments race the threads that hold the GIL or
 * dump too: a count lost, a code object freed while a function still
 * points to it, a crash in the collector long after. So under these two
 * versions the dump is never called: the frames are read where they are,
 * with reads only. */
#ifndef CAPGUARD_PYTHON_FRAMES_OLD_H
#define CAPGUARD_PYTHON_FRAMES_OLD_H

#include <stdbool.h>
#include <stddef.h>

#include "stack.h"

/* Whether the interpreter of version (0x030a for 3.10) takes references in
 * its dump: then the dump must not be called without the GIL. */
bool cg_py_dump_takes_refs(unsigned version);

/* Sets up the reader for the interpreter behind handle (dlsym's); false
 * where its objects are laid out otherwise (a debug build) or a symbol it
 * needs is missing: then no Python frames are read at all. */
bool cg_py_old_resolve(void *handle);

/* The frames of tstate (the calling thread's state), innermost first, as
 * the dump would name them: file, line and function, strings in buf; frames
 * that do not fit whole are left out from the outside in. */
size_t cg_py_old_frames(const void *tstate, cg_py_frame *out, size_t max, char *buf, size_t bufcap);

#endif
