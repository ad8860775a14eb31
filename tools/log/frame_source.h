/* file:line of a native frame from the DWARF line table of the object it
 * names (elfutils' libdw), when that object is found on this machine and has
 * debug info: the executable by the process's argv[0], libraries in
 * LD_LIBRARY_PATH and the system library directories. Results are cached per
 * frame; a log of a million events opens each object once. */
#ifndef CAPGUARD_FRAME_SOURCE_H
#define CAPGUARD_FRAME_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

/* frame: "obj(sym+0x1a)" or "obj+0x1234" (no trailing address). Writes
 * "file.c:123" and returns true, or returns false (buf untouched). */
bool cgl_frame_source(const char *frame, const char *argv0, char *buf, size_t cap);
/* frame: "obj+0x1234", an address in a function the object does not export
 * (so the shim's dladdr had no name for it): writes "obj(fn+0x1a)", the
 * function that holds it from the object's symbol table, and returns true;
 * false (buf untouched) when the object is not found here, has no symbol
 * there (stripped), or frame already names one. */
bool cgl_frame_named(const char *frame, const char *argv0, char *buf, size_t cap);
/* Drop the caches (objects opened, answers kept). */
void cgl_frame_source_reset(void);
/* What reads file:line, for doctor: "libdw 0.188, linked into capguard" (the
 * wheel links libdw statically, so a clean image needs no elfutils) or
 * "libdw 0.188 (libdw.so.1)". */
const char *cgl_frame_source_reader(void);

#endif
