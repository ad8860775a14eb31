/* Kernel names a load on the request path left unread: its image's
 * compressed entries, which the shim does not decompress there (the request
 * would pay for it), read here from the loaded object's file the log names
 * (request-path-load's image_source). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "capguard/image.h"

/* The image of size bytes at offset in object, inspected with its
 * compressed entries decompressed, into out; 0 when its bytes there hash
 * to hash (the log's 32 hex digits), -1 otherwise: a file that changed
 * since, is not a regular file, or is not there names nothing. */
int cgl_image_source_inspect(const char *object, uint64_t offset, uint64_t size, const char *hash,
                             cg_image_info *out);
