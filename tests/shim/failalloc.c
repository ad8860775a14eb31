/* An allocator that fails libcapguard's own allocations, preloaded before
 * the shim (LD_PRELOAD=libfailalloc.so:libcapguard.so): malloc, calloc and
 * realloc called from inside libcapguard.so (the caller's return address
 * lies in it) fail when the environment says so; everyone else's succeed,
 * so what is tested is capguard's handling of a failure, not the host's.
 *   CG_FAIL_AFTER=N  capguard's first N allocations succeed, every later one fails
 *   CG_FAIL_SEED=S   each of capguard's allocations fails with probability 1/2
 * At exit it says on stderr how many of capguard's allocations it failed. */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);

/* dlsym may allocate (its error buffer) before the real allocator is known:
 * those few early requests come from here and are never freed. */
static char early[1 << 16] __attribute__((aligned(16)));
static size_t early_used;
static __thread int resolving;

static uintptr_t shim_lo, shim_hi;
static int shim_state; /* 0 not looked for, 1 found, 2 absent */
static long fail_after = -1;
static unsigned long long seed;
static unsigned long capguard_calls, failed;

static void *early_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (early_used + n > sizeof early)
    return NULL;
  void *p = early + early_used;
  early_used += n;
  return p;
}

static void resolve(void) {
  if (next_malloc || resolving)
    return;
  resolving = 1;
  next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  resolving = 0;
}

static int find_shim(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  if (!info->dlpi_name || !strstr(info->dlpi_name, "libcapguard.so"))
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD)
      continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (!shim_lo || lo < shim_lo)
      shim_lo = lo;
    if (hi > shim_hi)
      shim_hi = hi;
  }
  return 1;
}

/* Looked for at the first allocation after every preload is mapped (the
 * first constructor to run, capguard's or this one's), so capguard's own
 * start-up is covered too. */
static void find_once(void) {
  static __thread int finding;
  if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) || finding)
    return;
  finding = 1;
  const char *s = getenv("CG_FAIL_AFTER");
  if (s && *s)
    fail_after = atol(s);
  s = getenv("CG_FAIL_SEED");
  if (s && *s)
    seed = strtoull(s, NULL, 10) | 1;
  dl_iterate_phdr(find_shim, NULL);
  __atomic_store_n(&shim_state, shim_hi ? 1 : 2, __ATOMIC_RELEASE);
  finding = 0;
}

__attribute__((constructor)) static void init(void) {
  resolve();
  find_once();
}

__attribute__((destructor)) static void report(void) {
  if (shim_state == 1) {
    char line[160];
    int n = snprintf(line, sizeof line, "failalloc: %lu of capguard's %lu allocations failed\n", failed,
                     capguard_calls);
    if (write(2, line, (size_t)n) < 0) {
    }
  }
}

static int should_fail(const void *caller) {
  find_once();
  if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) != 1)
    return 0;
  uintptr_t a = (uintptr_t)caller;
  if (a < shim_lo || a >= shim_hi)
    return 0;
  unsigned long n = __atomic_add_fetch(&capguard_calls, 1, __ATOMIC_RELAXED);
  int fail = 0;
  if (fail_after >= 0 && n > (unsigned long)fail_after)
    fail = 1;
  if (seed) {
    /* xorshift64: a fixed sequence per seed, so a failure can be replayed */
    unsigned long long x = __atomic_load_n(&seed, __ATOMIC_RELAXED);
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    __atomic_store_n(&seed, x, __ATOMIC_RELAXED);
    fail = fail || (x & 1);
  }
  if (fail)
    __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED);
  return fail;
}

void *malloc(size_t n) {
  resolve();
  if (!next_malloc)
    return early_alloc(n);
  return should_fail(__builtin_return_address(0)) ? NULL : next_malloc(n);
}

void *calloc(size_t k, size_t n) {
  resolve();
  if (!next_calloc)
    return early_alloc(k * n); /* zeroed: static storage, never reused */
  return should_fail(__builtin_return_address(0)) ? NULL : next_calloc(k, n);
}

void *realloc(void *p, size_t n) {
  resolve();
  if (!next_realloc)
    return NULL;
  return should_fail(__builtin_return_address(0)) ? NULL : next_realloc(p, n);
}

void free(void *p) {
  if ((char *)p >= early && (char *)p < early + sizeof early)
    return;
  resolve();
  if (next_free)
    next_free(p);
}
