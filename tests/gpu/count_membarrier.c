/* Counts the membarrier system calls that interrupt the other threads
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED) made through libc's syscall(), as
 * capguard makes them, without ptrace: preloaded before the shim, its
 * syscall() is the one the shim's call binds to. At exit the count is
 * written to the file CG_COUNT_MEMBARRIER names. For
 * tests/gpu/fence_parking_gpu.py, where strace may not be installed. */
#include <dlfcn.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

static unsigned long counted;

long syscall(long number, ...) {
  static long (*real)(long, ...);
  if (!real)
    real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  /* As libc's own: six argument registers, whatever the call passed. */
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++)
    a[i] = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_membarrier && a[0] == MEMBARRIER_CMD_PRIVATE_EXPEDITED)
    __atomic_add_fetch(&counted, 1, __ATOMIC_RELAXED);
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

__attribute__((destructor)) static void write_count(void) {
  const char *path = getenv("CG_COUNT_MEMBARRIER");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (f) {
    fprintf(f, "%lu\n", __atomic_load_n(&counted, __ATOMIC_RELAXED));
    fclose(f);
  }
}
