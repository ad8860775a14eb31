/* Python stack capture without the GIL, the way faulthandler does it.
 *
 * CPython's own functions are found at run time (libpython is never linked,
 * so the shim works in any process): PyGILState_GetThisThreadState reads this
 * thread's state from thread-specific storage without a lock, and
 * _Py_DumpTraceback (PyUnstable_DumpTraceback from 3.15) writes that thread's
 * frames to an fd, async-signal-safe and without the GIL:
 *
 *   Stack (most recent call first):
 *     File "x.py", line 12 in f
 *
 * We hand it an anonymous memfd (a pipe could fill up and block the writer,
 * which is us), read it back and parse it. The frames belong to the calling
 * thread, which is inside this call, so they cannot change under us.
 *
 * Exports: 3.8, 3.11 and 3.12 export _Py_DumpTraceback (so does Ubuntu
 * 24.04's 3.12.3, which runs torch 2.11 on the GPU machine); 3.9, 3.10, 3.13
 * and 3.14 keep it hidden. For those we find the hidden symbol in the ELF
 * .symtab of the object holding libpython (well under 1 ms, once), which
 * works when that file is not stripped (pyenv, python.org and most source
 * builds); stripped distro builds of those versions get no Python frames.
 * The dump format "line N in f" is the same from 3.8 to 3.14. */
#include "stack.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef void *(*this_state_fn)(void);
typedef void (*dump_fn)(int fd, void *tstate);
typedef int (*is_init_fn)(void);

/* Resolved functions; g_this is stored last and is the "resolved" flag. */
static _Atomic(void *) g_this;
static _Atomic(void *) g_dump;
static _Atomic(void *) g_is_init;
/* While unresolved, look again at most once per this many calls (a process
 * may load an embedded interpreter after the shim started). */
#define CG_PY_RETRY_EVERY 64
static atomic_uint g_calls;
/* The object whose .symtab was already scanned, so a failed scan of a big
 * file is not repeated on every retry. */
static _Atomic(void *) g_scanned_base;

/* ---- ELF .symtab lookup of a hidden symbol ----------------------------- */

/* Bounds on what a scan reads; libpython's symtab and strtab are ~1 MB. */
#define CG_ELF_MAX_TABLE (64u << 20)
#define CG_ELF_MAX_CANDIDATES 8

static bool pread_all(int fd, void *dst, size_t n, off_t off) {
  char *p = dst;
  while (n > 0) {
    ssize_t r = pread(fd, p, n, off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
    off += r;
  }
  return true;
}

static bool read_shdr(int fd, const Elf64_Ehdr *eh, unsigned idx, Elf64_Shdr *sh) {
  return pread_all(fd, sh, sizeof *sh, (off_t)(eh->e_shoff + (uint64_t)idx * eh->e_shentsize));
}

/* Offsets in strtab where "name\0" starts (suffix sharing means one may sit
 * inside a longer string; any of them can be some symbol's st_name). */
static size_t find_name_offsets(int fd, const Elf64_Shdr *strtab, const char *name,
                                uint64_t *offs, size_t max) {
  size_t nlen = strlen(name) + 1; /* with its NUL */
  char chunk[4096];
  size_t found = 0;
  uint64_t pos = 0;
  while (pos < strtab->sh_size && found < max) {
    uint64_t left = strtab->sh_size - pos;
    size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
    if (n < nlen || !pread_all(fd, chunk, n, (off_t)(strtab->sh_offset + pos))) break;
    for (size_t i = 0; i + nlen <= n && found < max; i++)
      if (chunk[i] == name[0] && memcmp(chunk + i, name, nlen) == 0) offs[found++] = pos + i;
    if (n == left) break;
    pos += n - (nlen - 1); /* overlap so a name across the boundary is seen */
  }
  return found;
}

/* The address of function `name` (local or global) defined in the object
 * that contains `anchor`, from that file's .symtab; NULL if absent. */
static void *symtab_lookup(void *anchor, const char *name) {
  Dl_info info;
  struct link_map *lm = NULL;
  if (!dladdr1(anchor, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return NULL;
  const char *path = (lm->l_name && lm->l_name[0]) ? lm->l_name : "/proc/self/exe";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;

  void *result = NULL;
  struct stat st;
  Elf64_Ehdr eh;
  if (fstat(fd, &st) != 0 || !pread_all(fd, &eh, sizeof eh, 0)) goto out;
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > (uint64_t)st.st_size)
    goto out;

  Elf64_Shdr symtab, strtab;
  bool have = false;
  for (unsigned i = 0; i < eh.e_shnum && !have; i++) {
    if (!read_shdr(fd, &eh, i, &symtab)) goto out;
    have = symtab.sh_type == SHT_SYMTAB;
  }
  if (!have || symtab.sh_entsize != sizeof(Elf64_Sym) || symtab.sh_link >= eh.e_shnum ||
      !read_shdr(fd, &eh, symtab.sh_link, &strtab) || strtab.sh_type != SHT_STRTAB)
    goto out;
  if (symtab.sh_size > CG_ELF_MAX_TABLE || strtab.sh_size > CG_ELF_MAX_TABLE ||
      symtab.sh_offset + symtab.sh_size > (uint64_t)st.st_size ||
      strtab.sh_offset + strtab.sh_size > (uint64_t)st.st_size)
    goto out;

  uint64_t offs[CG_ELF_MAX_CANDIDATES];
  size_t noffs = find_name_offsets(fd, &strtab, name, offs, CG_ELF_MAX_CANDIDATES);
  if (noffs == 0) goto out;

  Elf64_Sym syms[128];
  uint64_t count = symtab.sh_size / sizeof(Elf64_Sym);
  for (uint64_t i = 0; i < count && !result; i += 128) {
    size_t n = count - i < 128 ? (size_t)(count - i) : 128;
    if (!pread_all(fd, syms, n * sizeof(Elf64_Sym),
                   (off_t)(symtab.sh_offset + i * sizeof(Elf64_Sym))))
      break;
    for (size_t k = 0; k < n && !result; k++) {
      const Elf64_Sym *s = &syms[k];
      if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || s->st_value == 0)
        continue;
      for (size_t j = 0; j < noffs; j++)
        if (s->st_name == offs[j]) result = (void *)(lm->l_addr + s->st_value);
    }
  }
  /* The address must fall inside the same loaded object. */
  Dl_info check;
  if (result && (!dladdr(result, &check) || check.dli_fbase != info.dli_fbase)) result = NULL;
out:
  close(fd);
  return result;
}

/* ---- finding libpython -------------------------------------------------- */

static int find_libpython_cb(struct dl_phdr_info *pi, size_t size, void *data) {
  (void)size;
  const char *n = pi->dlpi_name;
  if (!n || !*n) return 0;
  const char *b = strrchr(n, '/');
  b = b ? b + 1 : n;
  if (strncmp(b, "libpython3", 10) != 0) return 0;
  size_t len = strlen(n);
  if (len >= 4096) return 0;
  memcpy(data, n, len + 1);
  return 1;
}

/* A handle on a libpython loaded RTLD_LOCAL (an embedding application), whose
 * symbols RTLD_DEFAULT does not see. Kept open: we hold pointers into it. */
static void *local_libpython(void) {
  char path[4096];
  path[0] = '\0';
  if (!dl_iterate_phdr(find_libpython_cb, path) || !path[0]) return NULL;
  return dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
}

/* Python's major.minor as 0x030d for 3.13, 0 if unknown: Py_Version (3.11+)
 * or else the leading "3.10.13" of Py_GetVersion(). */
static unsigned python_version(void *handle) {
  const unsigned long *ver = cg_real_dlsym(handle, "Py_Version");
  if (ver) return (unsigned)(*ver >> 16);
  const char *(*get)(void) = (const char *(*)(void))cg_real_dlsym(handle, "Py_GetVersion");
  const char *s = get ? get() : NULL;
  if (!s || s[0] != '3' || s[1] != '.') return 0;
  const char *p = s + 2;
  unsigned minor = 0;
  while (*p >= '0' && *p <= '9' && minor < 256) minor = minor * 10 + (unsigned)(*p++ - '0');
  return (p == s + 2 || minor > 255) ? 0 : 0x0300u | minor;
}

/* An unexported _Py_DumpTraceback is trusted only where its signature
 * (int fd, PyThreadState *) is known: 3.8 to 3.15. */
static bool hidden_dump_trusted(void *handle) {
  unsigned v = python_version(handle);
  return v >= 0x0308 && v <= 0x030f;
}

static void resolve(void) {
  if (!cg_real_dlsym || atomic_load(&g_this)) return;
  void *h = RTLD_DEFAULT, *local = NULL;
  void *this_state = cg_real_dlsym(h, "PyGILState_GetThisThreadState");
  if (!this_state) {
    local = local_libpython();
    if (!local) return;
    h = local;
    this_state = cg_real_dlsym(h, "PyGILState_GetThisThreadState");
  }
  void *is_init = this_state ? cg_real_dlsym(h, "Py_IsInitialized") : NULL;
  void *dump = NULL;
  if (is_init) dump = cg_real_dlsym(h, "PyUnstable_DumpTraceback");
  if (is_init && !dump) dump = cg_real_dlsym(h, "_Py_DumpTraceback");
  Dl_info info;
  bool located = this_state && dladdr(this_state, &info) && info.dli_fname;
  if (is_init && !dump && located && hidden_dump_trusted(h) &&
      atomic_load(&g_scanned_base) != info.dli_fbase) {
    atomic_store(&g_scanned_base, info.dli_fbase);
    dump = symtab_lookup(this_state, "_Py_DumpTraceback");
  }
  if (!dump || !located) {
    if (local) dlclose(local);
    return;
  }
  /* Pin the object we now hold pointers into, so an embedding application's
   * dlclose cannot unmap it under us (a no-op for the main program). */
  if (!local && info.dli_fname[0]) local = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  (void)local; /* deliberately never closed */
  atomic_store(&g_dump, dump);
  atomic_store(&g_is_init, is_init);
  atomic_store(&g_this, this_state);
}

void cg_stack_init(void) {
  /* backtrace's first call loads libgcc_s and allocates; do it now, at load
   * time, rather than inside a driver call. */
  void *warm[4];
  (void)backtrace(warm, 4);
  resolve();
}

/* ---- scratch file and parsing ------------------------------------------ */

/* An anonymous file that never blocks its writer. */
static int scratch_fd(void) {
  int fd = memfd_create("capguard-pystack", MFD_CLOEXEC);
  if (fd >= 0) return fd;
  fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  return open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

typedef struct {
  cg_py_frame *out;
  size_t max, n;
  char *buf;
  size_t cap, len;
} py_sink;

/* Copies s[0..n) into the sink's buffer as a string; NULL when out of room. */
static const char *keep(py_sink *k, const char *s, size_t n) {
  if (k->len + n + 1 > k->cap) return NULL;
  char *d = k->buf + k->len;
  memcpy(d, s, n);
  d[n] = '\0';
  k->len += n + 1;
  return d;
}

static const char *find_last(const char *s, size_t n, const char *pat) {
  size_t m = strlen(pat);
  for (size_t i = n >= m ? n - m + 1 : 0; i-- > 0;)
    if (memcmp(s + i, pat, m) == 0) return s + i;
  return NULL;
}

/* One line of the dump. Frames are `  File "f", line N in func` (3.8-3.14;
 * a later ", in" is accepted too) and `line ???` when unknown; other lines
 * (the header, "<no Python frame>", "...") are skipped. A line cut short
 * (`complete` false) still yields its frame, with what we have of the file.
 * Returns false when the sink is full. */
static bool parse_line(py_sink *k, const char *s, size_t n, bool complete) {
  static const char head[] = "  File \"";
  const size_t hl = sizeof head - 1;
  if (n < hl || memcmp(s, head, hl) != 0) return true;
  s += hl;
  n -= hl;
  const char *file = s, *func = "?";
  size_t file_len = n, func_len = 1;
  long line = 0;
  const char *mark = complete ? find_last(s, n, "\", line ") : NULL;
  if (mark) {
    file_len = (size_t)(mark - s);
    const char *p = mark + 8, *end = s + n;
    while (p < end && *p >= '0' && *p <= '9' && line < 100000000) line = line * 10 + (*p++ - '0');
    while (p < end && *p != ' ' && *p != ',') p++; /* "???" */
    if (p < end && *p == ',') p++;
    if (end - p >= 4 && memcmp(p, " in ", 4) == 0) {
      func = p + 4;
      func_len = (size_t)(end - func);
    }
  }
  cg_py_frame *f = &k->out[k->n];
  f->file = keep(k, file, file_len);
  f->func = f->file ? keep(k, func, func_len) : NULL;
  if (!f->file || !f->func) return false;
  f->line = (int)line;
  k->n++;
  return k->n < k->max;
}

/* Reads the dump back line by line through a small window. */
static void parse_dump(int fd, py_sink *k) {
  char win[4096];
  size_t have = 0;
  off_t off = 0;
  bool skipping = false; /* inside the rest of an over-long line */
  for (;;) {
    ssize_t r = pread(fd, win + have, sizeof win - have, off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) r = 0;
    off += r;
    have += (size_t)r;
    size_t start = 0;
    for (size_t i = 0; i < have; i++) {
      if (win[i] != '\n') continue;
      if (!skipping && !parse_line(k, win + start, i - start, true)) return;
      skipping = false;
      start = i + 1;
    }
    if (r == 0) { /* end of the dump: a last line without its newline */
      if (!skipping && start < have) (void)parse_line(k, win + start, have - start, false);
      return;
    }
    if (start == 0 && have == sizeof win) { /* a line longer than the window */
      if (!skipping && !parse_line(k, win, have, false)) return;
      skipping = true;
      have = 0;
      continue;
    }
    memmove(win, win + start, have - start);
    have -= start;
  }
}

size_t cg_python_stack(cg_py_frame *out, size_t max, char *buf, size_t bufcap) {
  if (!out || !buf || max == 0 || bufcap == 0) return 0;
  if (!atomic_load(&g_this)) {
    if (atomic_fetch_add(&g_calls, 1) % CG_PY_RETRY_EVERY != 0) return 0;
    resolve();
    if (!atomic_load(&g_this)) return 0;
  }
  this_state_fn this_state = (this_state_fn)atomic_load(&g_this);
  dump_fn dump = (dump_fn)atomic_load(&g_dump);
  is_init_fn is_init = (is_init_fn)atomic_load(&g_is_init);
  /* Before Py_Initialize (or after finalization) the thread-state key may
   * not exist; PyGILState_GetThisThreadState would read a wrong slot. */
  if (!is_init()) return 0;
  void *tstate = this_state();
  if (!tstate) return 0;

  int fd = scratch_fd();
  if (fd < 0) return 0;
  dump(fd, tstate);
  py_sink k = {out, max, 0, buf, bufcap, 0};
  parse_dump(fd, &k);
  close(fd);
  return k.n;
}
