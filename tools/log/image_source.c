#include "image_source.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger images and scratch than these are not read: a log could name any
 * file and size. */
#define IMAGE_MAX ((uint64_t)512 << 20)
#define SCRATCH_MAX ((size_t)1 << 30)

/* size bytes at offset of a regular file, in memory of their own; NULL when
 * they are not all there. O_NONBLOCK: a FIFO named by a hostile log does not
 * block the open (and is then refused as not regular). */
/* What one report reads from image sources in all: a log may name the same
 * large file in a million events. Past it, names are left unread. */
#define READ_TOTAL_MAX ((uint64_t)2 << 30)
static uint64_t read_total;

static unsigned char *read_range(const char *path, uint64_t offset, uint64_t size) {
  if (size > READ_TOTAL_MAX - read_total)
    return NULL;
  read_total += size;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return NULL;
  struct stat st;
  unsigned char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && size && size <= IMAGE_MAX &&
      offset <= (uint64_t)st.st_size && size <= (uint64_t)st.st_size - offset && (buf = malloc(size))) {
    uint64_t got = 0;
    while (got < size) {
      ssize_t n = pread(fd, buf + got, size - got, (off_t)(offset + got));
      if (n <= 0)
        break;
      got += (uint64_t)n;
    }
    if (got != size) {
      free(buf);
      buf = NULL;
    }
  }
  close(fd);
  return buf;
}

int cgl_image_source_inspect(const char *object, uint64_t offset, uint64_t size, const char *hash,
                             cg_image_info *out) {
  if (!object || !hash || strlen(hash) != 32)
    return -1;
  unsigned char *img = read_range(object, offset, size);
  if (!img)
    return -1;
  char got[33];
  int rc = -1;
  if (cg_image_inspect(img, (size_t)size, out) == 0) {
    cg_hash_format(out->hash, got);
    size_t room = out->unpack_room;
    void *scratch = room && room <= SCRATCH_MAX ? malloc(room) : NULL;
    if (!strcmp(got, hash) && out->size == size &&
        (!room || (scratch && cg_image_inspect_with(img, (size_t)size, out, scratch, room) == 0)))
      rc = 0;
    free(scratch);
  }
  free(img);
  return rc;
}
