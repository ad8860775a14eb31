/* Native stack capture: glibc backtrace() into a local array, dladdr for names
 * (through symbol_cache.c: once per address).
 * No backtrace_symbols (it mallocs) and no stdio (vfprintf may allocate):
 * formatting is done by hand into the caller's buffer. backtrace() itself
 * allocates only on its first call (it dlopens libgcc_s), which
 * cg_stack_init (stack_python.c, with the Python lookups) makes early. */
#include "stack.h"
#include "loader_gate.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

#include "capguard/event.h" /* CG_TEXT_NATIVE_FRAMES */
#include "capguard/frame_filter.h"
#include "capguard/text_out.h"
#include "symbol_cache.h"
#include "readable_frame.h"
#include "locks.h"

/* Deepest stack walked; frames past it are not reported. */
#define CG_BT_DEPTH 128

static const char *base_name(const char *path) {
  if (!path || !*path) return "?";
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Symbolizes one return address into w as "obj(sym+0x1a)" or "obj+0x1234"
 * (and " [0x7f..]" when with_addr). Looks up addr-1: a return address can
 * point past the end of a function that ends in a call to a noreturn one.
 * readable: the form a person reads (readable_frame.h: demangled, " at
 * file.c:12"), for the lines written; else the form the log's stacks keep,
 * which capguard report parses and resolves itself. Returns whether all of
 * it fit (cg_out_fits). */
static bool put_frame(cg_out *w, void *addr, bool with_addr, bool readable) {
  cg_symbol info;
  uintptr_t a = (uintptr_t)addr;
  if (readable && cg_readable_frame(w, addr)) {
    /* written */
  } else if (a > 1 && cg_symbol_of((void *)(a - 1), &info)) {
    cg_out_str(w, base_name(info.file));
    if (info.sym && info.sym_addr) {
      cg_out_char(w, '(');
      cg_out_str(w, info.sym);
      cg_out_char(w, '+');
      cg_out_hex(w, a - info.sym_addr);
      cg_out_char(w, ')');
    } else {
      cg_out_char(w, '+');
      cg_out_hex(w, a - info.base);
    }
  } else {
    cg_out_str(w, "??");
  }
  if (with_addr) {
    cg_out_str(w, " [");
    cg_out_hex(w, a);
    cg_out_char(w, ']');
  }
  return cg_out_fits(w);
}

/* Index of our caller's frame: the one holding our own return address.
 * Usually 1, but a wrapper around backtrace() (a sanitizer's interceptor)
 * adds frames of its own in front. */
static size_t caller_index(void *const *frames, int got, const void *ret) {
  for (int i = 0; i < got && i < 8; i++)
    if (frames[i] == ret) return (size_t)i;
  return 1;
}

__attribute__((noinline)) size_t cg_native_stack(int skip, const char **out, size_t max,
                                                 char *buf, size_t bufcap) {
  if (!out || !buf || max == 0 || bufcap == 0) return 0;
  if (skip < 0) skip = 0;
  void *frames[CG_BT_DEPTH];
  /* Walk deep enough for a few wrapper frames, our caller, skip and max. */
  if ((size_t)skip >= CG_BT_DEPTH - 8) return 0;
  size_t want = max > CG_BT_DEPTH - 8 - (size_t)skip ? CG_BT_DEPTH : 8 + (size_t)skip + max;
  int got = backtrace(frames, (int)want);
  size_t first = caller_index(frames, got, __builtin_return_address(0)) + (size_t)skip;
  if (got <= 0 || (size_t)got <= first) return 0;

  cg_out w = cg_out_init(buf, bufcap);
  size_t n = 0;
  for (size_t i = first; i < (size_t)got && n < max; i++) {
    if (w.len + 1 >= w.cap) break; /* no room for a byte and its NUL */
    size_t start = w.len;
    /* out of room: stop rather than hand back a cut frame */
    if (!put_frame(&w, frames[i], true, false)) break;
    w.buf[w.len++] = '\0'; /* fits: buf[len] has room for the frame's NUL */
    out[n++] = w.buf + start;
  }
  return n;
}

/* capguard's own object, as addresses: [own_start, own_end), found once
 * from its program headers (no symbol lookup). */
static uintptr_t own_start, own_end;
static int own_found(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t lo = UINTPTR_MAX, hi = 0, self = (uintptr_t)data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (self < lo || self >= hi) return 0;
  __atomic_store_n(&own_end, hi, __ATOMIC_RELAXED);
  __atomic_store_n(&own_start, lo, __ATOMIC_RELEASE);
  return 1;
}
static bool in_own_object(uintptr_t a) {
  if (!__atomic_load_n(&own_start, __ATOMIC_ACQUIRE))
    cg_dl_iterate_phdr(own_found, (void *)(uintptr_t)&cg_native_frames);
  return a >= __atomic_load_n(&own_start, __ATOMIC_ACQUIRE) && a < __atomic_load_n(&own_end, __ATOMIC_RELAXED);
}

__attribute__((noinline)) size_t cg_native_frames(void **out, size_t max) {
  if (!out || max == 0) return 0;
  void *frames[CG_BT_DEPTH];
  size_t want = max > CG_BT_DEPTH - 16 ? CG_BT_DEPTH : max + 16;
  int got = backtrace(frames, (int)want);
  size_t i = caller_index(frames, got, __builtin_return_address(0));
  while (i < (size_t)got && in_own_object((uintptr_t)frames[i] - 1)) i++;
  size_t n = 0;
  for (; i < (size_t)got && n < max; i++) out[n++] = frames[i];
  return n;
}

static size_t symbolize(void *const *frames, size_t n, const char **out, char *buf, size_t bufcap,
                        bool readable) {
  if (!frames || !out || !buf || bufcap == 0) return 0;
  cg_out w = cg_out_init(buf, bufcap);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (w.len + 1 >= w.cap) break; /* no room for a byte and its NUL */
    size_t start = w.len;
    /* named for a person only where the text shows it (event.h) */
    if (!put_frame(&w, frames[i], true, readable && i < CG_TEXT_NATIVE_FRAMES)) break; /* out of room: no cut frame */
    w.buf[w.len++] = '\0';
    out[k++] = w.buf + start;
  }
  return k;
}

/* ---- frames as objects and offsets, with no symbol lookup
 * A load on the request path is paid for by a request: dladdr scans a
 * library's whole symbol table (about 350 us for an address in torch's
 * libtorch_cuda.so) and a frame's line is read from its object's file,
 * which cost a served request milliseconds (measured on an H200). There the
 * frames are written "obj+0xoff [0xaddr]": which object holds each address
 * comes from the loader's list of objects and their segments, one
 * dl_iterate_phdr walk for all frames; capguard report names them from the
 * objects' files. */
#define CG_OFFSET_NAME 96
typedef struct {
  void *const *frames;
  size_t n;
  char (*names)[CG_OFFSET_NAME]; /* "" until found; the main program's: "\1" */
  uintptr_t *base;
} offsets_walk;

static int assign_objects(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  offsets_walk *w = data;
  for (int p = 0; p < info->dlpi_phnum; p++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[p];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    for (size_t i = 0; i < w->n; i++) {
      uintptr_t a = (uintptr_t)w->frames[i] - 1; /* a return address: the call is before it */
      if (w->names[i][0] || a < lo || a >= hi) continue;
      /* copied here: the loader's name lives only while the object does */
      const char *name = info->dlpi_name && *info->dlpi_name ? base_name(info->dlpi_name) : "\1";
      size_t len = strlen(name);
      if (len >= CG_OFFSET_NAME) len = CG_OFFSET_NAME - 1;
      memcpy(w->names[i], name, len);
      w->names[i][len] = '\0';
      w->base[i] = info->dlpi_addr;
    }
  }
  return 0;
}

/* The main program's name (it is "" in the loader's list): the path it
 * was executed by (AT_EXECFN), which is what capguard report finds it by. */
static const char *main_program_name(void) {
  const char *fn = (const char *)getauxval(AT_EXECFN);
  return fn && *fn ? base_name(fn) : "?";
}

size_t cg_native_offsets(void *const *frames, size_t n, const char **out, char *buf, size_t bufcap) {
  if (!frames || !out || !buf || bufcap == 0) return 0;
  if (n > CG_MAX_NATIVE_FRAMES) n = CG_MAX_NATIVE_FRAMES;
  char names[CG_MAX_NATIVE_FRAMES][CG_OFFSET_NAME];
  uintptr_t base[CG_MAX_NATIVE_FRAMES];
  for (size_t i = 0; i < n; i++) names[i][0] = '\0';
  offsets_walk walk = {frames, n, names, base};
  cg_dl_iterate_phdr(assign_objects, &walk);
  cg_out w = cg_out_init(buf, bufcap);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (w.len + 1 >= w.cap) break; /* no room for a byte and its NUL */
    size_t start = w.len;
    uintptr_t a = (uintptr_t)frames[i];
    if (!names[i][0]) {
      cg_out_str(&w, "??");
    } else {
      cg_out_str(&w, names[i][0] == '\1' ? main_program_name() : names[i]);
      cg_out_char(&w, '+');
      cg_out_hex(&w, a - base[i]);
    }
    cg_out_str(&w, " [");
    cg_out_hex(&w, a);
    cg_out_char(&w, ']');
    if (!cg_out_fits(&w)) break; /* out of room: no cut frame */
    w.buf[w.len++] = '\0';
    out[k++] = w.buf + start;
  }
  return k;
}

size_t cg_native_symbolize(void *const *frames, size_t n, const char **out, char *buf, size_t bufcap) {
  return symbolize(frames, n, out, buf, bufcap, false);
}

size_t cg_native_symbolize_readable(void *const *frames, size_t n, const char **out, char *buf, size_t bufcap) {
  return symbolize(frames, n, out, buf, bufcap, true);
}

/* Frames to skip for "where": capguard's own object (whatever its file is
 * called), and those cg_frame_is_plumbing names. */
static bool uninteresting(const cg_symbol *info, uintptr_t own_base) {
  return info->base == own_base || cg_frame_is_plumbing(base_name(info->file));
}

static size_t where_now(void *const *frames, size_t n, char *buf, size_t cap) {
  buf[0] = '\0';
  cg_symbol self;
  uintptr_t own_base = 0;
  if (cg_symbol_of((void *)(uintptr_t)&cg_native_where_frames, &self)) own_base = self.base;
  for (size_t i = 0; i < n; i++) {
    cg_symbol info;
    uintptr_t a = (uintptr_t)frames[i];
    if (a <= 1 || !cg_symbol_of((void *)(a - 1), &info)) continue;
    if (uninteresting(&info, own_base)) continue;
    cg_out w = cg_out_init(buf, cap);
    (void)put_frame(&w, frames[i], false, true); /* too long for cap: keep what fits */
    cg_out_finish(&w);
    return cg_out_stored(&w);
  }
  return 0;
}

/* Answers by frames: dladdr scans a library's whole symbol table (about
 * 350 us for an address in torch's libtorch_cuda.so), and a log names the
 * same few sites again and again. Direct-mapped and bounded; the lock is
 * never held across dladdr. An entry is a site's answer for as long as the
 * objects at those addresses stay loaded (libraries that call the driver
 * are not unloaded while they run). */
#define CG_WHERE_ENTRIES 256
#define CG_WHERE_TEXT 384
typedef struct {
  void *frames[CG_WHERE_FRAMES];
  size_t n;
  char text[CG_WHERE_TEXT];
} where_entry;
static where_entry where_kept[CG_WHERE_ENTRIES];
static pthread_mutex_t where_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t where_slot(void *const *frames, size_t n) {
  uint64_t h = n;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint64_t)(uintptr_t)frames[i]) * 0x100000001b3ull;
  return (size_t)(h ^ (h >> 29)) % CG_WHERE_ENTRIES;
}

size_t cg_native_where_frames(void *const *frames, size_t n, char *buf, size_t cap) {
  if (!buf || cap == 0) return 0;
  buf[0] = '\0';
  if (!frames || n > CG_WHERE_FRAMES) return frames ? where_now(frames, n, buf, cap) : 0;
  where_entry *e = &where_kept[where_slot(frames, n)];
  size_t len = 0;
  /* At exit the cache is skipped when its lock is busy: the code a signal
   * handler interrupted may hold it (locks.h). */
  if (!cg_lock_or_skip_at_exit(&where_lock))
    return where_now(frames, n, buf, cap);
  bool hit = e->n == n && n && memcmp(e->frames, frames, n * sizeof *frames) == 0;
  if (hit) {
    cg_out w = cg_out_init(buf, cap);
    cg_out_str(&w, e->text);
    cg_out_finish(&w);
    len = cg_out_stored(&w);
  }
  cg_unlock(&where_lock);
  if (hit) return len;
  len = where_now(frames, n, buf, cap);
  if (len + 1 < cap && len + 1 < CG_WHERE_TEXT) { /* kept only when whole */
    if (!cg_lock_or_skip_at_exit(&where_lock))
      return len;
    memcpy(e->frames, frames, n * sizeof *frames);
    e->n = n;
    memcpy(e->text, buf, len + 1);
    cg_unlock(&where_lock);
  }
  return len;
}

void cg_native_where_atfork_child(void) {
  pthread_mutex_init(&where_lock, NULL);
  cg_symbol_cache_atfork_child();
  cg_readable_frame_atfork_child();
}
