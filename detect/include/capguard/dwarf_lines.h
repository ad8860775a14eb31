/* file:line of an address from an ELF object's DWARF line table
 * (.debug_line, versions 2 to 5), with libc alone: the shim names its
 * frames' source lines inside someone else's process, where libdw cannot
 * be linked. Bounded: the object is read with pread (never mapped: a file
 * may shrink under a mapping and a read past its end is a SIGBUS), one line
 * program at a time, each at most CG_DWARF_UNIT_MAX bytes and all of them
 * together at most CG_DWARF_LINES_MAX. Anything it does not read (32-bit or
 * big-endian ELF, compressed debug sections, no .debug_line, a unit too
 * big, a corrupt table) is "no answer", never a crash. */
#ifndef CAPGUARD_DWARF_LINES_H
#define CAPGUARD_DWARF_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One compilation unit's line program read at a time: 16 MiB holds the
 * biggest unit of a -g build of a large C++ file (torch's biggest are a
 * few MiB) while bounding what one lookup mallocs in the host. */
#define CG_DWARF_UNIT_MAX (16u << 20)
/* All units read for one lookup: the time a lookup can take (a few tens of
 * ms) stays bounded whatever the object; a library with more line table
 * than this (a whole -g framework) gets no file:line. */
#define CG_DWARF_LINES_MAX (64u << 20)

/* pc: an address as the object was linked (a run-time address minus the
 * object's load bias, link_map's l_addr: 0 for a non-PIE executable). On
 * success writes "file.c:123" (the file's base name) into buf and returns
 * true; false leaves buf as "". */
bool cg_dwarf_line_of(const char *path, uint64_t pc, char *buf, size_t cap);
/* The same over an object's bytes in memory (the fuzz target's way in). */
bool cg_dwarf_line_in_memory(const void *data, size_t size, uint64_t pc, char *buf, size_t cap);

#endif
