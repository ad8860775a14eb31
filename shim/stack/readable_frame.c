/* Readable frames (readable_frame.h). The shim links only libc, libdl and
 * libpthread: the demangler is the C++ runtime's own __cxa_demangle, used
 * only when the process has that runtime loaded already (never loaded for
 * it), and the line table is read by detect/frames/dwarf_lines.c (libc alone).
 * Both cost far more than dladdr (a line lookup reads the object's
 * .debug_line), so each address's text is made once and kept: only frames
 * that are written are ever made readable. */
#include "readable_frame.h"
#include "loader_gate.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/dwarf_lines.h"
#include "capguard/elf_symbols.h"
#include "capguard/kernel_name.h"
#include "locks.h"
#include "real_dlsym.h"
#include "stack.h"

typedef cg_demangle_fn demangle_fn;

/* Found once the host has loaded it; the handle that found it is kept open
 * so that the runtime stays loaded while capguard may call it. */
static demangle_fn demangler;

/* How many objects the loader has added so far (its first entry says, and
 * the walk stops there). */
static int first_entry(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(unsigned long long *)data = info->dlpi_adds;
  return 1;
}

/* A search that found no runtime is not made again until the loader has
 * added an object: a C host without one would otherwise pay three dlopen
 * lookups for each kernel name it shows (a load on the request path among
 * them). */
static unsigned long long missed_at_adds;

static demangle_fn find_demangler(void) {
  demangle_fn fn = __atomic_load_n(&demangler, __ATOMIC_ACQUIRE);
  if (fn || !cg_real_dlsym)
    return fn;
  unsigned long long adds = 0;
  cg_dl_iterate_phdr(first_entry, &adds);
  if (adds && adds == __atomic_load_n(&missed_at_adds, __ATOMIC_RELAXED))
    return NULL;
  static const char runtimes[][16] = {"libstdc++.so.6", "libc++abi.so.1", "libc++.so.1"};
  for (size_t i = 0; !fn && i < sizeof runtimes / sizeof runtimes[0]; i++) {
    void *h = dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD); /* loaded already, or nothing */
    if (!h)
      continue;
    fn = (demangle_fn)(uintptr_t)cg_real_dlsym(h, "__cxa_demangle");
    if (!fn)
      dlclose(h);
  }
  if (fn)
    __atomic_store_n(&demangler, fn, __ATOMIC_RELEASE);
  else
    __atomic_store_n(&missed_at_adds, adds, __ATOMIC_RELAXED);
  return fn;
}

cg_demangle_fn cg_host_demangler(void) { return find_demangler(); }

/* Longer demangled names lose their parameter list: a template's can run
 * to thousands of characters, and the name says which function it is. */
#define SHORT_NAME 120

/* name with its outermost trailing "(...)" parameter list written as
 * "(...)" (a qualifier after it, " const", kept). */
static void put_short(cg_out *w, const char *name) {
  size_t n = strlen(name);
  if (n <= SHORT_NAME) {
    cg_out_str(w, name);
    return;
  }
  size_t close = n;
  while (close > 0 && name[close - 1] != ')')
    close--;
  if (close == 0) {
    cg_out_str(w, name);
    return;
  }
  int depth = 0;
  size_t open = close; /* the '(' matching name[close - 1] */
  while (open > 0) {
    char c = name[--open];
    if (c == ')')
      depth++;
    else if (c == '(' && --depth == 0)
      break;
  }
  if (depth != 0 || open == 0) {
    cg_out_str(w, name);
    return;
  }
  cg_out_mem(w, name, open);
  cg_out_str(w, "(...)");
  cg_out_str(w, name + close);
}

/* Writes the symbol, demangled where it can be. */
static void put_symbol(cg_out *w, const char *sym) {
  demangle_fn fn = sym[0] == '_' && sym[1] == 'Z' ? find_demangler() : NULL;
  int status = -1;
  char *pretty = fn ? fn(sym, NULL, NULL, &status) : NULL;
  if (pretty && status == 0)
    put_short(w, pretty);
  else
    cg_out_str(w, sym);
  free(pretty);
}

/* Where the last few objects' line programs are (dwarf_lines.h's index):
 * a frame's object usually has other frames written, and a -g object's
 * first lookup scans its table up to the answer, the next ones only the
 * unit that holds their address. Each index is lent to one thread at a
 * time (busy), never used under the lock; a thread that finds its object's
 * index lent out looks without one. */
#define LINE_INDEXES 4
typedef struct {
  char path[256]; /* "": free */
  bool busy;
  cg_dwarf_index ix;
} line_index;
static line_index indexes[LINE_INDEXES];
static unsigned next_victim;
static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;

static bool take_index_lock(void) { return cg_lock_or_skip_at_exit(&index_lock); /* at exit never a wait (locks.h) */ }

/* The index of path, lent to this thread (NULL: none to lend). A victim
 * taken for another object keeps its units until the lookup, outside the
 * lock, finds them of another file and frees them (no free under a lock). */
static line_index *borrow_index(const char *path) {
  size_t len = strlen(path);
  if (len >= sizeof indexes[0].path || !take_index_lock())
    return NULL;
  line_index *got = NULL;
  bool known = false;
  for (unsigned i = 0; i < LINE_INDEXES && !known; i++)
    if (!strcmp(indexes[i].path, path))
      known = true, got = indexes[i].busy ? NULL : &indexes[i];
  for (unsigned k = 0; !known && !got && k < LINE_INDEXES; k++) {
    line_index *v = &indexes[next_victim++ % LINE_INDEXES];
    if (!v->busy) {
      got = v;
      memcpy(got->path, path, len + 1);
    }
  }
  if (got)
    got->busy = true;
  cg_unlock(&index_lock);
  return got;
}

static void give_back_index(line_index *li) {
  if (li && take_index_lock()) {
    li->busy = false;
    cg_unlock(&index_lock);
  }
}

static bool line_of(const char *path, uint64_t pc, char *buf, size_t cap) {
  line_index *li = borrow_index(path);
  bool found = cg_dwarf_line_indexed(path, CG_DWARF_DEBUG_ROOT, pc, li ? &li->ix : NULL, buf, cap);
  give_back_index(li);
  return found;
}

static const char *base_name(const char *path) {
  if (!path || !*path)
    return "?";
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* The text of ret's frame made now: dladdr, the demangler and the line
 * table. False when the loader knows no object at ret - 1. */
static bool make_text(void *ret, cg_out *w) {
  uintptr_t a = (uintptr_t)ret;
  Dl_info info;
  struct link_map *lm = NULL;
  if (a <= 1 || !dladdr1((void *)(a - 1), &info, (void **)&lm, RTLD_DL_LINKMAP) || !info.dli_fname)
    return false;
  cg_out_str(w, base_name(info.dli_fname));
  /* The executable's link_map has no name: its file is /proc/self/exe.
   * l_addr is the load bias (0 for a non-PIE executable): the line table and
   * the symbol table hold addresses as linked. */
  const char *path = lm ? (lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe") : NULL;
  char sym[256];
  uint64_t sym_at = 0;
  if (info.dli_sname && info.dli_saddr) {
    cg_out_char(w, '(');
    put_symbol(w, info.dli_sname);
    cg_out_char(w, '+');
    cg_out_hex(w, a - (uintptr_t)info.dli_saddr);
    cg_out_char(w, ')');
  } else if (path && cg_elf_function_of(path, (uint64_t)(a - 1 - lm->l_addr), sym, sizeof sym, &sym_at)) {
    /* a function the object does not export: named from its symbol table */
    cg_out_char(w, '(');
    put_symbol(w, sym);
    cg_out_char(w, '+');
    cg_out_hex(w, a - (uintptr_t)(sym_at + lm->l_addr));
    cg_out_char(w, ')');
  } else {
    cg_out_char(w, '+');
    cg_out_hex(w, a - (uintptr_t)info.dli_fbase);
  }
  if (path) {
    char line[160];
    if (line_of(path, (uint64_t)(a - 1 - lm->l_addr), line, sizeof line)) {
      cg_out_str(w, " at ");
      cg_out_str(w, line);
    }
  }
  return true;
}

/* Direct-mapped and bounded, as symbol_cache.c: a collision replaces the
 * older answer; the lock is held only to copy. */
#define READABLE_ENTRIES 256
#define READABLE_TEXT 320
typedef struct {
  void *ret; /* NULL: empty */
  bool found;
  char text[READABLE_TEXT];
} readable_entry;
static readable_entry kept[READABLE_ENTRIES];
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static readable_entry *slot_of(const void *ret) {
  uint64_t h = (uint64_t)(uintptr_t)ret * 0x9e3779b97f4a7c15ull;
  return &kept[(h >> 40) % READABLE_ENTRIES];
}


bool cg_readable_frame(cg_out *w, void *ret) {
  readable_entry *e = slot_of(ret);
  char text[READABLE_TEXT];
  bool hit = false, found = false;
  if (ret && cg_lock_or_skip_at_exit(&kept_lock)) { /* at exit not when busy: an interrupted holder (locks.h) */
    hit = e->ret == ret;
    found = e->found;
    if (hit && found)
      memcpy(text, e->text, sizeof text);
    cg_unlock(&kept_lock);
  }
  if (!hit) {
    /* open and pread are cancellation points: a host's cancel must not
     * unwind this thread with the unit's buffer and the descriptor held */
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    cg_out t = cg_out_init(text, sizeof text);
    found = make_text(ret, &t);
    pthread_setcancelstate(old, NULL);
    if (found && !cg_out_fits(&t))
      return false; /* too long to keep whole: the caller writes it plainly */
    cg_out_finish(&t);
    if (cg_lock_or_skip_at_exit(&kept_lock)) {
      e->ret = ret;
      e->found = found;
      memcpy(e->text, text, sizeof text);
      cg_unlock(&kept_lock);
    }
  }
  if (found)
    cg_out_str(w, text);
  return found;
}

bool cg_readable_frame_now(cg_out *w, void *ret) {
  char text[READABLE_TEXT];
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  cg_out t = cg_out_init(text, sizeof text);
  bool found = make_text(ret, &t);
  pthread_setcancelstate(old, NULL);
  if (!found || !cg_out_fits(&t))
    return false;
  cg_out_finish(&t);
  cg_out_str(w, text);
  return true;
}

void cg_readable_frame_atfork_child(void) {
  pthread_mutex_init(&kept_lock, NULL);
  pthread_mutex_init(&index_lock, NULL);
  /* an index lent to a thread the child does not have stays lent */
}
