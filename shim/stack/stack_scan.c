/* Another thread's callers, from its stack (the hang watcher's: that
 * thread waits inside a driver call, so the frames between the wrapper and
 * its caller do not change meanwhile). No unwinder can walk another
 * thread's stack, so the words above the wrapper's return address are
 * scanned for return addresses: a word that points just past a call
 * instruction (x86-64: call rel32, call *rel32(%rip), call *%reg, call
 * *disp(%reg)) in a loaded object. Every read goes through
 * process_vm_readv, which fails (EFAULT) where memory is not mapped, so a
 * thread that left meanwhile costs a wrong guess at worst, never a fault. */
#include "stack.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define SCAN_BYTES 4096 /* the frames of libcudart and its callers' first few */

static bool read_self(const void *at, void *into, size_t n) {
  struct iovec local = {into, n}, remote = {(void *)(uintptr_t)at, n};
  /* the system call, not glibc 2.15's wrapper: one symbol version fewer for
   * the loader to check at every start-up (thread_id.h) */
  return syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL) == (long)n;
}

/* Whether ra is just past a call instruction of a loaded object. */
static bool after_call(uintptr_t ra) {
#if defined(__x86_64__)
  Dl_info info;
  unsigned char b[7];
  if (ra < 4096 || !dladdr((void *)ra, &info) || !info.dli_fname || !read_self((void *)(ra - 7), b, sizeof b))
    return false;
  return b[2] == 0xe8                               /* call rel32 */
         || (b[1] == 0xff && b[2] == 0x15)          /* call *rel32(%rip) */
         || (b[5] == 0xff && (b[6] & 0xf8) == 0xd0) /* call *%reg */
         || (b[4] == 0xff && (b[5] & 0xf8) == 0x50) /* call *disp8(%reg) */
         || (b[1] == 0xff && (b[2] & 0xf8) == 0x90) /* call *disp32(%reg) */
         || (b[4] == 0xff && b[5] == 0x14)          /* call *(sib) */
         || (b[3] == 0xff && b[4] == 0x54);         /* call *disp8(sib) */
#else
  (void)ra;
  return false;
#endif
}

size_t cg_native_scan_callers(const void *ra_slot, void **out, size_t max) {
  uintptr_t words[SCAN_BYTES / sizeof(uintptr_t)];
  size_t n = 0;
  if (!ra_slot || !max)
    return 0;
  /* the stack's top may be nearer than SCAN_BYTES: read less until it fits */
  size_t len = sizeof words;
  while (len >= sizeof(uintptr_t) && !read_self(ra_slot, words, len))
    len /= 2;
  for (size_t i = 1; i < len / sizeof(uintptr_t) && n < max;
       i++) /* words[0]: the wrapper's own return address */
    if (after_call(words[i]))
      out[n++] = (void *)words[i];
  return n;
}
