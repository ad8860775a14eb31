/* Which loaded object's file holds a range of bytes, and where in it: for
 * an image a load was given from a library's own read-only data (the CUDA
 * runtime's fatbins live in the .nv_fatbin section of the library that
 * holds the kernels). capguard report can then read the image from that
 * file, where the request that made the load would not pay for it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* true when [p, p + size) lies whole in a file-backed loaded segment of an
 * object with a path: its path in path (cap bytes; false when it does not
 * fit) and the bytes' offset in that file in *offset. One walk of the
 * loader's list, no symbol lookup. */
bool cg_object_bytes(const void *p, size_t size, char *path, size_t cap, uint64_t *offset);
