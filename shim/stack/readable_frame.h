/* A native frame as a person reads it, for the lines capguard writes: the
 * object's base name, the function demangled when the process has a C++
 * demangler loaded already, and the source line where the object's DWARF
 * line table says, in the form capguard report prints (tools/log/log_site.h):
 * "obj(ns::f(int)+0x1a) at file.cc:12", "prog(main+0x26f8) at prog.c:102",
 * "prog+0x13d0" when nothing more is known. */
#ifndef CAPGUARD_READABLE_FRAME_H
#define CAPGUARD_READABLE_FRAME_H

#include <stdbool.h>

#include "capguard/text_out.h"

/* Appends return address ret's frame to w (looked up at ret - 1, the call).
 * Asked once per address (bounded cache); a miss takes the loader's lock
 * (dladdr), may malloc and reads the object's line table: never with
 * capguard's own locks held. False when the loader knows no object there
 * (nothing written). */
bool cg_readable_frame(cg_out *w, void *ret);
/* The same made now, without the cache and so without its lock: for the
 * hang watch's thread, which takes no lock of capguard's (a report that
 * rare needs no cache). */
bool cg_readable_frame_now(cg_out *w, void *ret);
/* Fork: the child starts with the lock released. */
void cg_readable_frame_atfork_child(void);

#endif
