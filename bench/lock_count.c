/* LD_PRELOAD'ed before libcapguard.so by capture_locks.py: counts how often
 * each mutex and read-write lock is taken, by its address, and at exit
 * writes one line a lock to $LOCK_COUNT_OUT: the library whose data holds
 * it (dladdr, only then: never inside a lock call), its kind and count.
 *   libcapguard.so mutex 0x7f... 6001
 * The counts are kept in a fixed open-addressed table, lock-free: the
 * counted calls come from every thread, inside capguard's own locks. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SLOTS = 4096 };
static struct {
  void *lock;
  const char *kind;
  unsigned long n;
} counted[SLOTS];

static void count(void *lock, const char *kind) {
  for (unsigned i = (unsigned)((uintptr_t)lock >> 3) % SLOTS, tries = 0; tries < SLOTS; i = (i + 1) % SLOTS, tries++) {
    void *seen = __atomic_load_n(&counted[i].lock, __ATOMIC_ACQUIRE);
    if (!seen) {
      void *none = NULL;
      if (__atomic_compare_exchange_n(&counted[i].lock, &none, lock, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        counted[i].kind = kind;
        seen = lock;
      } else
        seen = none;
    }
    if (seen == lock) {
      __atomic_add_fetch(&counted[i].n, 1, __ATOMIC_RELAXED);
      return;
    }
  }
}

#define COUNTED(name, type, kind)                                                                  \
  int name(type *l) {                                                                              \
    static int (*real)(type *);                                                                    \
    if (!real)                                                                                     \
      real = (int (*)(type *))dlsym(RTLD_NEXT, #name);                                             \
    count(l, kind);                                                                                \
    return real(l);                                                                                \
  }
COUNTED(pthread_mutex_lock, pthread_mutex_t, "mutex")
COUNTED(pthread_rwlock_rdlock, pthread_rwlock_t, "rdlock")
COUNTED(pthread_rwlock_wrlock, pthread_rwlock_t, "wrlock")

__attribute__((destructor)) static void write_counts(void) {
  const char *path = getenv("LOCK_COUNT_OUT");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f)
    return;
  for (int i = 0; i < SLOTS; i++) {
    if (!counted[i].lock)
      continue;
    Dl_info d;
    const char *lib = dladdr(counted[i].lock, &d) && d.dli_fname ? strrchr(d.dli_fname, '/') : NULL;
    fprintf(f, "%s %s %p %lu\n", lib ? lib + 1 : "-", counted[i].kind, counted[i].lock, counted[i].n);
  }
  fclose(f);
}
