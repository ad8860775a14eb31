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
 * The dump format "line N in f" is the same from 3.8 to 3.14. 3.9's and
 * 3.10's dump takes references without the GIL: under those two the frames
 * are read in place instead (python_frames_old.c). */
#include "stack.h"
#include "loader_gate.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capguard/image.h" /* cg_hash_bytes */
#include "python_frames_old.h"

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
  if (!cg_dl_iterate_phdr(find_libpython_cb, path) || !path[0]) return NULL;
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

/* ---- the interpreter's frames, read in place (cg_python_fingerprint) --- */

/* Where the calling thread's frames are, for the CPython versions whose
 * layout capguard knows (from their headers: Include/cpython/pystate.h and
 * Include/internal/pycore_frame.h; 3.13 publishes them in _PyRuntime's
 * debug offsets, which are read instead): the thread state holds the
 * current frame directly (3.13) or through a _PyCFrame (3.11, 3.12). */
typedef struct {
  size_t ts_frame;   /* thread state -> current frame, or -> cframe */
  size_t via_cframe; /* SIZE_MAX: none; else cframe -> current frame */
  size_t code, previous, instr, owner;
  int shim_owner; /* FRAME_OWNED_BY_CSTACK (frames the dump skips); -1: none */
  size_t co_filename, co_firstlineno, co_linetable; /* in a code object */
} py_layout;
static py_layout g_layout;
static _Atomic(const void *) g_code_type; /* &PyCode_Type; non-NULL: g_layout is set */

static bool layout_of_313(void *handle, py_layout *l) {
  /* _Py_DebugOffsets at the start of _PyRuntime (3.13's pycore_runtime.h):
   * the cookie, the version, then the offsets capguard reads, at these
   * positions in 3.13's struct. */
  const unsigned char *rt = cg_real_dlsym(handle, "_PyRuntime");
  if (!rt || memcmp(rt, "xdebugpy", 8) != 0)
    return false;
  uint64_t version, o[5];
  memcpy(&version, rt + 8, sizeof version);
  if ((version >> 16) != 0x030d)
    return false;
  static const size_t at[5] = {184, 232, 240, 248, 264}; /* current_frame, previous, executable, instr_ptr, owner */
  for (int i = 0; i < 5; i++) {
    memcpy(&o[i], rt + at[i], sizeof o[i]);
    if (o[i] > 4096)
      return false;
  }
  /* The code object's fields as 3.13's default build has them (a
   * free-threaded build lays objects out otherwise: not read). */
  static const size_t code_at[4] = {280, 312, 304, 360}; /* filename, firstlineno, linetable, ob_type */
  static const uint64_t code_want[4] = {112, 68, 136, 8};
  for (int i = 0; i < 4; i++) {
    uint64_t v;
    memcpy(&v, rt + code_at[i], sizeof v);
    if (v != code_want[i])
      return false;
  }
  *l = (py_layout){o[0], SIZE_MAX, o[2], o[1], o[3], o[4], 3, 112, 68, 136};
  return true;
}

static void resolve_layout(void *handle) {
  if (atomic_load(&g_code_type))
    return;
  const void *code_type = cg_real_dlsym(handle, "PyCode_Type");
  /* A debug build (Py_DEBUG, Py_TRACE_REFS) lays its objects out otherwise. */
  if (!code_type || cg_real_dlsym(handle, "_Py_NegativeRefcount") || cg_real_dlsym(handle, "_Py_RefTotal"))
    return;
  py_layout l;
  switch (python_version(handle)) {
  case 0x030b:
    l = (py_layout){56, 8, 32, 48, 56, 69, -1, 112, 72, 136};
    break;
  case 0x030c:
    l = (py_layout){56, 0, 0, 8, 56, 70, 3, 112, 68, 136};
    break;
  case 0x030d:
    if (!layout_of_313(handle, &l))
      return;
    break;
  default:
    return;
  }
  g_layout = l;
  atomic_store(&g_code_type, code_type);
}

static void resolve_at(void);
/* How many objects the loader has loaded and unloaded (dlpi_adds and
 * dlpi_subs, the same in every object's record): read from the first. */
static int loads_cb(struct dl_phdr_info *pi, size_t size, void *data) {
  if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof pi->dlpi_subs) return 1;
  *(unsigned long long *)data = pi->dlpi_adds * 2 + pi->dlpi_subs * 3 + 1;
  return 1;
}

/* The loader's count when a look found no interpreter: a look finds what
 * the loaded objects hold, so it is made again only once they changed (an
 * interpreter embedded by a dlopen since). Nine lookups of symbols and a
 * walk of every object were about 45 instructions a capture, at a look
 * every CG_PY_RETRY_EVERY-th. */
static _Atomic unsigned long long g_loads_looked;

static void resolve(void) {
  if (!cg_real_dlsym || atomic_load(&g_this)) return;
  unsigned long long loads = 0;
  cg_dl_iterate_phdr(loads_cb, &loads);
  if (loads && atomic_load(&g_loads_looked) == loads) return;
  resolve_at();
  if (!atomic_load(&g_this)) atomic_store(&g_loads_looked, loads);
}

static void resolve_at(void) {
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
  /* 3.9 and 3.10: never the dump (python_frames_old.h), the frames in place. */
  bool refs = is_init && cg_py_dump_takes_refs(python_version(h));
  bool in_place = refs && cg_py_old_resolve(h);
  if (is_init && !refs) dump = cg_real_dlsym(h, "PyUnstable_DumpTraceback");
  if (is_init && !refs && !dump) dump = cg_real_dlsym(h, "_Py_DumpTraceback");
  Dl_info info;
  bool located = this_state && dladdr(this_state, &info) && info.dli_fname;
  if (is_init && !refs && !dump && located && hidden_dump_trusted(h) &&
      atomic_load(&g_scanned_base) != info.dli_fbase) {
    atomic_store(&g_scanned_base, info.dli_fbase);
    dump = symtab_lookup(this_state, "_Py_DumpTraceback");
  }
  if ((!dump && !in_place) || !located) {
    if (local) dlclose(local);
    return;
  }
  /* Pin the object we now hold pointers into, so an embedding application's
   * dlclose cannot unmap it under us (a no-op for the main program). */
  if (!local && info.dli_fname[0]) local = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  (void)local; /* deliberately never closed */
  resolve_layout(h);
  atomic_store(&g_dump, dump);
  atomic_store(&g_is_init, is_init);
  atomic_store(&g_this, this_state);
}

void cg_stack_init(void) {
  /* backtrace's first call loads libgcc_s and allocates; do it now, at load
   * time, rather than inside a driver call. */
  void *warm[4];
  (void)backtrace(warm, 4);
  cg_native_site_init();
  resolve();
}

/* ---- scratch file and parsing ------------------------------------------ */

/* An anonymous file that never blocks its writer. memfd_create through
 * syscall, which the shim imports anyway: glibc's wrapper alone needed
 * the version name GLIBC_2.27, and each version name the shim needs is
 * checked at every process's start-up (about 250 instructions). */
static int scratch_fd(void) {
  int fd = (int)syscall(SYS_memfd_create, "capguard-pystack", MFD_CLOEXEC);
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

bool cg_python_maybe(void) {
  if (atomic_load(&g_this))
    return true;
  if (atomic_fetch_add(&g_calls, 1) % CG_PY_RETRY_EVERY != 0)
    return false;
  resolve();
  return atomic_load(&g_this) != NULL;
}

void *cg_python_this_state(void) {
  if (!atomic_load(&g_this)) {
    if (atomic_fetch_add(&g_calls, 1) % CG_PY_RETRY_EVERY != 0) return NULL;
    resolve();
    if (!atomic_load(&g_this)) return NULL;
  }
  this_state_fn this_state = (this_state_fn)atomic_load(&g_this);
  is_init_fn is_init = (is_init_fn)atomic_load(&g_is_init);
  /* Before Py_Initialize (or after finalization) the thread-state key may
   * not exist; PyGILState_GetThisThreadState would read a wrong slot. */
  if (!is_init()) return NULL;
  return this_state();
}

size_t cg_python_stack_of(void *tstate, cg_py_frame *out, size_t max, char *buf, size_t bufcap) {
  if (!tstate || !out || !buf || max == 0 || bufcap == 0) return 0;
  dump_fn dump = (dump_fn)atomic_load(&g_dump);
  is_init_fn is_init = (is_init_fn)atomic_load(&g_is_init);
  if (!is_init || !is_init()) return 0;
  if (!dump) return cg_py_old_frames(tstate, out, max, buf, bufcap);
  int fd = scratch_fd();
  if (fd < 0) return 0;
  dump(fd, tstate);
  py_sink k = {out, max, 0, buf, bufcap, 0};
  parse_dump(fd, &k);
  close(fd);
  return k.n;
}

size_t cg_python_stack(cg_py_frame *out, size_t max, char *buf, size_t bufcap) {
  if (!out || !buf || max == 0 || bufcap == 0) return 0;
  return cg_python_stack_of(cg_python_this_state(), out, max, buf, bufcap);
}

/* ---- fingerprint --------------------------------------------------------- */

#define CG_PY_FP_FRAMES 32 /* raw frames: at least the 16 named ones, with a shim frame between each */

static _Atomic int g_fp_off; /* set when a check against the dump failed: fingerprints are not trusted */

static inline const void *word_at(const void *base, size_t off) { return *(const void *const *)((const char *)base + off); }

/* The calling thread's current frame, NULL when it has none. */
static const void *current_frame(const py_layout *l) {
  this_state_fn this_state = (this_state_fn)atomic_load(&g_this);
  is_init_fn is_init = (is_init_fn)atomic_load(&g_is_init);
  if (!this_state || !is_init || !is_init())
    return NULL;
  const void *ts = this_state();
  if (!ts)
    return NULL;
  const void *f = word_at(ts, l->ts_frame);
  if (f && l->via_cframe != SIZE_MAX)
    f = word_at(f, l->via_cframe);
  return f;
}

int cg_python_fingerprint(cg_hash128 *out) { return cg_python_fingerprint_short(out, CG_PY_FP_FRAMES, NULL, NULL); }

int cg_python_fingerprint_short(cg_hash128 *out, int max_raw, int *named, bool *whole) {
  const void *code_type = atomic_load_explicit(&g_code_type, memory_order_acquire);
  /* Unknown layout, not resolved yet (an interpreter loaded later is
   * looked for by cg_python_stack), or turned off: the dump's way. */
  if (!code_type || atomic_load_explicit(&g_fp_off, memory_order_relaxed))
    return CG_PY_FP_UNKNOWN;
  const py_layout *l = &g_layout;
  const void *f = current_frame(l);
  if (!f)
    return CG_PY_FP_NONE;
  /* Per frame: its code object and instruction and, since a code object
   * freed and another made at its address (a notebook's cells) must not
   * pass for it, the code object's length, constants, names, file name
   * (its object, length and cached hash), first line and line table (its
   * length and first bytes): what its lines are made of. */
  /* The code object's words are folded into one (a multiply and a
   * rotation each): the key stays short enough for the hash's short path
   * (4 frames: 104 bytes), at every begin. */
  uintptr_t words[1 + CG_PY_FP_FRAMES * 3];
  size_t n = 0;
  if (max_raw > CG_PY_FP_FRAMES)
    max_raw = CG_PY_FP_FRAMES;
  words[n++] = (uintptr_t)max_raw; /* keys of different lengths never match */
  int names = 0;
  for (int i = 0; f && i < max_raw; i++) {
    /* named by the dump: as walk_count counts */
    if (i == 0 || l->shim_owner < 0 || *((const char *)f + l->owner) != l->shim_owner)
      names++;
    const void *code = word_at(f, l->code);
    words[n++] = (uintptr_t)code;
    words[n++] = (uintptr_t)word_at(f, l->instr);
    uint64_t id = 0x9e3779b97f4a7c15ull;
#define CG_FOLD(w) (id = ((id ^ (uint64_t)(w)) * 0xff51afd7ed558ccdull), id = (id << 29) | (id >> 35))
    if (code && word_at(code, sizeof(void *)) == code_type) {
      CG_FOLD(word_at(code, 2 * sizeof(void *))); /* ob_size */
      CG_FOLD(word_at(code, 3 * sizeof(void *))); /* co_consts */
      CG_FOLD(word_at(code, 4 * sizeof(void *))); /* co_names */
      CG_FOLD(*(const int *)((const char *)code + l->co_firstlineno));
      const void *file = word_at(code, l->co_filename);
      CG_FOLD(file);
      if (file) {
        CG_FOLD(word_at(file, 2 * sizeof(void *))); /* length */
        CG_FOLD(word_at(file, 3 * sizeof(void *))); /* hash */
      }
      const void *table = word_at(code, l->co_linetable);
      if (table) {
        uintptr_t size = (uintptr_t)word_at(table, 2 * sizeof(void *));
        CG_FOLD(size);
        uintptr_t head[4] = {0, 0, 0, 0}; /* ob_sval: after the size and the cached hash */
        memcpy(head, (const char *)table + 4 * sizeof(void *), size < sizeof head ? size : sizeof head);
        for (int k = 0; k < 4; k++)
          CG_FOLD(head[k]);
      }
    }
#undef CG_FOLD
    words[n++] = (uintptr_t)id;
    f = word_at(f, l->previous);
  }
  if (named)
    *named = names;
  if (whole)
    *whole = f == NULL;
  *out = cg_hash_bytes(words, n * sizeof words[0]);
  return CG_PY_FP_OK;
}

/* How many frames the dump would name (up to max), walked in place. */
static size_t walk_count(size_t max) {
  const py_layout *l = &g_layout;
  const void *f = current_frame(l);
  size_t n = 0;
  for (bool first = true; f && n < max; first = false) {
    char owner = *((const char *)f + l->owner);
    if (first || l->shim_owner < 0 || owner != l->shim_owner)
      n++;
    f = word_at(f, l->previous);
  }
  return n;
}

bool cg_python_fingerprint_check(void) {
  if (!atomic_load(&g_code_type) || atomic_load(&g_fp_off))
    return false;
  enum { MAX = 64, TEXT = 256 << 10 };
  cg_py_frame *py = malloc(MAX * sizeof *py);
  char *text = malloc(TEXT);
  if (!py || !text) {
    free(py);
    free(text);
    return false;
  }
  size_t dumped = cg_python_stack(py, MAX, text, TEXT);
  size_t walked = walk_count(MAX);
  free(py);
  free(text);
  /* Both stop at MAX: a deeper stack agrees on its first MAX frames. */
  if (dumped == walked)
    return true;
  atomic_store(&g_fp_off, 1);
  return false;
}
