#include "capguard/mem_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK 4096u
#define IOVS 64u /* every local iovec points at the same scratch page: 256 KiB per call, 4 KiB of buffer */

/* Set once process_vm_readv is known to be refused here (seccomp, old
 * kernel), so later checks go straight to the pipe. */
static bool vm_refused;

static cg_mem_state via_vm(const unsigned char *p, size_t n) {
  char scratch[CHUNK];
  struct iovec local[IOVS];
  for (unsigned i = 0; i < IOVS; i++)
    local[i] = (struct iovec){scratch, CHUNK};
  pid_t self = getpid();
  while (n) {
    size_t len = n < (size_t)CHUNK * IOVS ? n : (size_t)CHUNK * IOVS;
    struct iovec remote = {(void *)(uintptr_t)p, len};
    /* the system calls, not glibc's wrappers of 2.15 and 2.9: each newer
     * symbol version is one more the loader checks at the shim's every
     * start-up (about 120 instructions) */
    long got = syscall(SYS_process_vm_readv, self, local, (unsigned long)((len + CHUNK - 1) / CHUNK), &remote,
                       1UL, 0UL);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0 && errno == EFAULT)
      return CG_MEM_UNREADABLE;
    if (got < 0) {
      if (errno == ENOSYS || errno == EPERM)
        __atomic_store_n(&vm_refused, true, __ATOMIC_RELAXED);
      return CG_MEM_UNKNOWN;
    }
    if ((size_t)got != len) /* a partial copy stops at the first unreadable page */
      return CG_MEM_UNREADABLE;
    p += len;
    n -= len;
  }
  return CG_MEM_READABLE;
}

/* write(2) copies from the caller's memory in the kernel too, and says EFAULT. */
static cg_mem_state via_pipe(const unsigned char *p, size_t n) {
  int fd[2];
  if (syscall(SYS_pipe2, fd, O_CLOEXEC | O_NONBLOCK))
    return CG_MEM_UNKNOWN;
  char sink[CHUNK];
  cg_mem_state st = CG_MEM_READABLE;
  while (n && st == CG_MEM_READABLE) {
    size_t len = n < CHUNK ? n : CHUNK; /* at most PIPE_BUF: the pipe is drained after each write */
    ssize_t w = write(fd[1], p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      st = errno == EFAULT ? CG_MEM_UNREADABLE : CG_MEM_UNKNOWN;
    else if (w == 0 || read(fd[0], sink, (size_t)w) != w)
      st = CG_MEM_UNKNOWN;
    else {
      p += w;
      n -= (size_t)w;
    }
  }
  close(fd[0]);
  close(fd[1]);
  return st;
}

cg_mem_state cg_mem_check(const void *p, size_t n) {
  if (n == 0)
    return CG_MEM_READABLE;
  if (!p || (uintptr_t)p + n < (uintptr_t)p)
    return CG_MEM_UNREADABLE;
  if (!__atomic_load_n(&vm_refused, __ATOMIC_RELAXED)) {
    cg_mem_state st = via_vm(p, n);
    if (st != CG_MEM_UNKNOWN)
      return st;
  }
  return via_pipe(p, n);
}
