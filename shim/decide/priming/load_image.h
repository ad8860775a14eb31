/* What a load's image is, for its report and its priming record: kind,
 * exact size, arch, kernel names and hash (capguard/image.h), compressed
 * fatbin entries decompressed for their names, a fatbin said as the arch
 * this device runs it as. One place for the capture's path (guard.c) and
 * the request path (serving.c). */
#ifndef CAPGUARD_LOAD_IMAGE_H
#define CAPGUARD_LOAD_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "capguard/image.h"

/* 0, or -1 for an image capguard cannot read (malformed: the driver's
 * business). unpack: decompress compressed entries for their kernel names
 * (tens of milliseconds for a runtime fatbin: not on a request's path). */
int cg_load_image_inspect(const void *img, size_t limit, cg_image_info *out, bool unpack);

#endif
