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
/* All units read for one lookup (each unit visited counted 64 bytes more):
 * the time a lookup can take stays bounded whatever the object (about 27
 * instructions a byte: 64 MiB is under a second); a library with more line
 * table than this (a whole -g framework) gets file:line only in the units
 * read before the limit. */
#define CG_DWARF_LINES_MAX (64u << 20)

/* pc: an address as the object was linked (a run-time address minus the
 * object's load bias, link_map's l_addr: 0 for a non-PIE executable). On
 * success writes "file.c:123" (the file's base name) into buf and returns
 * true; false leaves buf as "". */
bool cg_dwarf_line_of(const char *path, uint64_t pc, char *buf, size_t cap);
/* Where an object's units are, kept between lookups by the caller: the
 * first lookup scans units up to the one that answers and keeps each one's
 * address range; a later one reads only the units whose range holds its
 * address, then scans on from where the last stopped. Of one file (device,
 * inode, size and mtime: a changed file starts again). */
typedef struct {
  uint64_t off, size, lo, hi; /* in .debug_line; addresses [lo, hi) */
} cg_dwarf_unit;
typedef struct {
  uint64_t dev, ino, size;
  int64_t mtime_ns;
  uint64_t scanned; /* .debug_line bytes whose units are all in units[] */
  cg_dwarf_unit *units;
  size_t n, cap;
} cg_dwarf_index;
/* An index holds at most this many units (2 MiB): a larger table is
 * scanned on past them at each lookup. */
#define CG_DWARF_INDEX_UNITS 65536u
/* cg_dwarf_line_of with an index (zeroed before its first use; ix NULL:
 * none; one thread at a time per index), and, for an object without a line
 * table, the one of its separate debug file found by build ID under
 * debug_root (DEBUG_ROOT/.build-id/ab/cdef....debug; NULL: not looked for;
 * the index is then of that file). */
#define CG_DWARF_DEBUG_ROOT "/usr/lib/debug"
bool cg_dwarf_line_indexed(const char *path, const char *debug_root, uint64_t pc, cg_dwarf_index *ix, char *buf,
                           size_t cap);
void cg_dwarf_index_free(cg_dwarf_index *ix);
/* The same over an object's bytes in memory (the fuzz target's way in);
 * ix, when not NULL, must have been used with these bytes only. */
bool cg_dwarf_line_in_memory(const void *data, size_t size, uint64_t pc, cg_dwarf_index *ix, char *buf,
                             size_t cap);

#endif
