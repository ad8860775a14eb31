#include "frame_source.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uthash.h>

typedef struct {
  UT_hash_handle hh;
  char *key;      /* object path, or frame text + '\n' + argv0 */
  Dwfl *dwfl;     /* objects: NULL when it could not be read */
  Dwfl_Module *mod;
  char *answer;   /* frames: "file:line", NULL when none */
} cache_entry;

static cache_entry *objects, *frames, *found; /* found: object name + argv0 -> path */
static cache_entry *names;                    /* frame text + argv0 -> "obj(sym+0x..)" */

static cache_entry *cached(cache_entry **t, const char *key) {
  cache_entry *e;
  HASH_FIND_STR(*t, key, e);
  return e;
}

static cache_entry *remember(cache_entry **t, const char *key) {
  cache_entry *e = calloc(1, sizeof *e);
  if (!e || !(e->key = strdup(key))) {
    free(e);
    return NULL;
  }
  HASH_ADD_KEYPTR(hh, *t, e->key, strlen(e->key), e);
  return e;
}

void cgl_frame_source_reset(void) {
  cache_entry *e, *tmp;
  HASH_ITER(hh, objects, e, tmp) {
    HASH_DEL(objects, e);
    if (e->dwfl) dwfl_end(e->dwfl);
    free(e->key);
    free(e);
  }
  HASH_ITER(hh, found, e, tmp) {
    HASH_DEL(found, e);
    free(e->answer);
    free(e->key);
    free(e);
  }
  HASH_ITER(hh, names, e, tmp) {
    HASH_DEL(names, e);
    free(e->answer);
    free(e->key);
    free(e);
  }
  HASH_ITER(hh, frames, e, tmp) {
    HASH_DEL(frames, e);
    free(e->answer);
    free(e->key);
    free(e);
  }
}

static bool regular_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Where the object a frame names is: the process's executable (argv[0]), else
 * a library directory. The log has base names only. */
static bool search_object(const char *name, const char *argv0, char *out, size_t cap) {
  if (argv0 && strchr(argv0, '/')) {
    const char *base = strrchr(argv0, '/') + 1;
    if (!strcmp(base, name) && regular_file(argv0) && snprintf(out, cap, "%s", argv0) < (int)cap)
      return true;
  }
  const char *env = getenv("LD_LIBRARY_PATH");
  char dirs[4096];
  snprintf(dirs, sizeof dirs, "%s:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:"
                              "/usr/lib64:/usr/local/lib", env ? env : "");
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
    if (*d && snprintf(out, cap, "%s/%s", d, name) < (int)cap && regular_file(out))
      return true;
  return false;
}

/* search_object, remembered (hits and misses) per object and executable. */
static bool find_object(const char *name, const char *argv0, char *out, size_t cap) {
  char key[1200];
  if (snprintf(key, sizeof key, "%s\n%s", name, argv0 ? argv0 : "") >= (int)sizeof key)
    return false;
  cache_entry *e = cached(&found, key);
  if (!e) {
    if (!(e = remember(&found, key))) return false;
    if (search_object(name, argv0, out, cap)) e->answer = strdup(out);
  }
  return e->answer && snprintf(out, cap, "%s", e->answer) < (int)cap;
}

static const Dwfl_Callbacks callbacks = {
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static Dwfl_Module *open_object(const char *path) {
  cache_entry *e = cached(&objects, path);
  if (e) return e->mod;
  if (!(e = remember(&objects, path))) return NULL;
  e->dwfl = dwfl_begin(&callbacks);
  if (!e->dwfl) return NULL;
  e->mod = dwfl_report_offline(e->dwfl, "", path, -1);
  dwfl_report_end(e->dwfl, NULL, NULL);
  return e->mod;
}

/* The address of sym in m (bias applied), 0 when absent. */
static Dwarf_Addr symbol_address(Dwfl_Module *m, const char *sym) {
  int n = dwfl_module_getsymtab(m);
  for (int i = 1; i < n; i++) {
    GElf_Sym s;
    GElf_Addr addr;
    const char *name = dwfl_module_getsym_info(m, i, &s, &addr, NULL, NULL, NULL);
    if (name && !strcmp(name, sym) && addr) return addr;
  }
  return 0;
}

/* The line of pc found by asking each compilation unit whether it holds pc.
 * dwfl_module_getsrc finds the unit through .debug_aranges, which clang does
 * not emit; elfutils before 0.189 then answers "address out of range" for
 * every clang-built object (the sanitized build's programs among them). */
static const char *source_by_cu_scan(Dwfl_Module *m, Dwarf_Addr pc, int *lineno) {
  Dwarf_Addr bias;
  for (Dwarf_Die *cu = NULL; (cu = dwfl_module_nextcu(m, cu, &bias));) {
    if (dwarf_haspc(cu, pc - bias) <= 0) continue;
    Dwarf_Line *l = dwarf_getsrc_die(cu, pc - bias);
    if (l && dwarf_lineno(l, lineno) == 0) return dwarf_linesrc(l, NULL, NULL);
  }
  return NULL;
}

static bool resolve(const char *frame, const char *argv0, char *buf, size_t cap) {
  /* "obj(sym+0xoff)" or "obj+0xoff" */
  char object[512], sym[512] = "";
  unsigned long long off;
  const char *open = strchr(frame, '(');
  if (open) {
    const char *plus = strrchr(open, '+');
    if (!plus || (size_t)(open - frame) >= sizeof object || (size_t)(plus - open - 1) >= sizeof sym ||
        sscanf(plus + 1, "0x%llx", &off) != 1)
      return false;
    memcpy(object, frame, (size_t)(open - frame));
    object[open - frame] = '\0';
    memcpy(sym, open + 1, (size_t)(plus - open - 1));
    sym[plus - open - 1] = '\0';
  } else {
    const char *plus = strrchr(frame, '+');
    if (!plus || (size_t)(plus - frame) >= sizeof object || sscanf(plus + 1, "0x%llx", &off) != 1)
      return false;
    memcpy(object, frame, (size_t)(plus - frame));
    object[plus - frame] = '\0';
  }
  char path[4096];
  if (!find_object(object, argv0, path, sizeof path)) return false;
  Dwfl_Module *m = open_object(path);
  if (!m) return false;
  Dwarf_Addr low = 0;
  dwfl_module_info(m, NULL, &low, NULL, NULL, NULL, NULL, NULL);
  Dwarf_Addr at = sym[0] ? symbol_address(m, sym) : low;
  if (!at && sym[0]) return false;
  /* a return address: the call is the instruction before it */
  Dwarf_Addr pc = at + off - 1;
  Dwfl_Line *line = dwfl_module_getsrc(m, pc);
  int lineno = 0;
  const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
  if (!file || lineno <= 0) file = source_by_cu_scan(m, pc, &lineno);
  if (!file || lineno <= 0) return false;
  const char *base = strrchr(file, '/');
  return snprintf(buf, cap, "%s:%d", base ? base + 1 : file, lineno) < (int)cap;
}

/* "obj+0xoff" as "obj(sym+0xoff')": the function that holds it, from the
 * object's symbol table (.symtab, or .dynsym), its offset in that function. */
static bool name_frame(const char *frame, const char *argv0, char *buf, size_t cap) {
  char object[512], path[4096];
  unsigned long long off;
  const char *plus = strrchr(frame, '+');
  if (strchr(frame, '(') || !plus || (size_t)(plus - frame) >= sizeof object ||
      sscanf(plus + 1, "0x%llx", &off) != 1 || !off)
    return false;
  memcpy(object, frame, (size_t)(plus - frame));
  object[plus - frame] = '\0';
  if (!find_object(object, argv0, path, sizeof path)) return false;
  Dwfl_Module *m = open_object(path);
  if (!m) return false;
  Dwarf_Addr low = 0;
  dwfl_module_info(m, NULL, &low, NULL, NULL, NULL, NULL, NULL);
  /* a return address: the call is the instruction before it */
  GElf_Off in_sym = 0;
  GElf_Sym sym;
  const char *name = dwfl_module_addrinfo(m, low + off - 1, &in_sym, &sym, NULL, NULL, NULL);
  if (!name || !*name || GELF_ST_TYPE(sym.st_info) != STT_FUNC) return false;
  return snprintf(buf, cap, "%s(%s+0x%llx)", object, name, (unsigned long long)in_sym + 1) < (int)cap;
}

bool cgl_frame_named(const char *frame, const char *argv0, char *buf, size_t cap) {
  char key[1200];
  if (snprintf(key, sizeof key, "%s\n%s", frame, argv0 ? argv0 : "") >= (int)sizeof key)
    return false;
  cache_entry *e = cached(&names, key);
  if (!e) {
    char answer[1024];
    if (!(e = remember(&names, key))) return false;
    if (name_frame(frame, argv0, answer, sizeof answer)) e->answer = strdup(answer);
  }
  return e->answer && snprintf(buf, cap, "%s", e->answer) < (int)cap;
}

const char *cgl_frame_source_reader(void) {
  static char reader[96];
  const char *v = dwfl_version(NULL);
#ifdef CG_LIBDW_STATIC
  snprintf(reader, sizeof reader, "libdw %s, linked into capguard", v ? v : "?");
#else
  snprintf(reader, sizeof reader, "libdw %s (libdw.so.1)", v ? v : "?");
#endif
  return reader;
}

bool cgl_frame_source(const char *frame, const char *argv0, char *buf, size_t cap) {
  char key[1200];
  if (snprintf(key, sizeof key, "%s\n%s", frame, argv0 ? argv0 : "") >= (int)sizeof key)
    return false;
  cache_entry *e = cached(&frames, key);
  if (!e) {
    char answer[512];
    if (!(e = remember(&frames, key))) return false;
    if (resolve(frame, argv0, answer, sizeof answer)) e->answer = strdup(answer);
  }
  if (!e->answer) return false;
  return snprintf(buf, cap, "%s", e->answer) < (int)cap;
}
