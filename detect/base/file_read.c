#include "capguard/file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* fcntl through syscall, the same call for these two commands: under
 * _FILE_OFFSET_BITS=64 glibc's fcntl is fcntl64, which alone needed the
 * version name GLIBC_2.28 in the shim, and each version name is checked at
 * every process's start-up (about 500 instructions). */
static int get_flags(int fd) { return (int)syscall(SYS_fcntl, fd, F_GETFL); }
static int set_flags(int fd, int flags) { return (int)syscall(SYS_fcntl, fd, F_SETFL, flags); }

void *cg_read_file(const char *path, size_t max, size_t *size) {
  /* O_NONBLOCK: opening a FIFO must not wait for a writer before fstat
   * says it is not a regular file (capguard reads cuModuleLoad's path inside
   * someone else's process). */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return NULL;
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= max &&
      set_flags(fd, get_flags(fd) & ~O_NONBLOCK) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    buf[got] = 0;
    *size = got + 1;
  } else if (!errno) {
    errno = EINVAL;
  }
  close(fd);
  return buf;
}
