/* Reading a whole (module image) file, bounded. */
#ifndef CAPGUARD_FILE_READ_H
#define CAPGUARD_FILE_READ_H

#include <stddef.h>

/* The contents of the regular file at path plus one NUL byte (PTX files are
 * text without one, and the driver API wants it), in a malloc'ed buffer the
 * caller frees; *size counts the bytes read plus that NUL. NULL (errno set)
 * when the file cannot be read, is not regular, is empty or exceeds max bytes. */
void *cg_read_file(const char *path, size_t max, size_t *size);

#endif
