/* The Python line a capture began at (or a call was made at), kept by the
 * thread's frame fingerprint: reading the frames through the interpreter's
 * dump costs a memfd and a write per word (35 us for a shallow stack, 300 us
 * for one 60 frames deep, measured under torch), and a serving
 * engine begins its captures from the same few lines. The fingerprint
 * (cg_python_fingerprint) reads the frames in place; the dump runs once per
 * distinct stack, and when the fingerprint cannot be had. */
#include "python_site.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "capguard/frame_filter.h"
#include "stack.h"
#include "locks.h"

/* The innermost frame outside the frameworks' machinery
 * (torch/cuda/graphs.py's capture_begin is not what a person wrote), or the
 * innermost frame when all are, from the dump. Returns the index of the
 * frame named among the dump's, -1 when it is the innermost for want of
 * any outside the machinery. */
static int site_from_dump_of(void *tstate, char *buf, size_t cap) {
  cg_py_frame py[16];
  char text[4096];
  size_t n = tstate ? cg_python_stack_of(tstate, py, sizeof py / sizeof py[0], text, sizeof text)
                    : cg_python_stack(py, sizeof py / sizeof py[0], text, sizeof text);
  buf[0] = 0;
  if (!n)
    return -1;
  size_t pick = 0;
  while (pick < n && cg_py_file_is_machinery(py[pick].file))
    pick++;
  int found = pick < n ? (int)pick : -1;
  if (pick == n)
    pick = 0;
  snprintf(buf, cap, "%s:%d in %s", py[pick].file ? py[pick].file : "?", py[pick].line,
           py[pick].func ? py[pick].func : "?");
  return found;
}

static int site_from_dump(char *buf, size_t cap) { return site_from_dump_of(NULL, buf, cap); }

void cg_python_site_of(void *tstate, char *buf, size_t cap) {
  buf[0] = 0;
  if (tstate)
    site_from_dump_of(tstate, buf, cap);
}

/* Sites by fingerprint: direct-mapped, bounded; a slot lost to another
 * stack is read again with the dump. */
#define CG_PY_SITES 256
typedef struct {
  cg_hash128 key;
  bool used;
  bool deeper; /* a short key whose site lies past its frames: look again with the long one */
  char site[CG_PY_SITE_MAX];
} py_site_entry;
static py_site_entry sites[CG_PY_SITES];
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
/* The in-place reading is checked against the dump once, on the first
 * stack it fingerprints (cg_python_fingerprint_check). */
static bool checked;

/* A begin 60 frames deep would read and hash 32 frames for its key; the
 * site is the innermost frame outside the machinery, mostly among the
 * first few. So a site is kept under the key of the innermost SHORT_FRAMES
 * raw frames when it lies among them (or they are the whole stack): the
 * same key then names the same frames up to the site, and so the same
 * site. One past them is kept under the 32-frame key, and the short key
 * says to look there. */
#define SHORT_FRAMES 4

/* The site kept for key (copied into buf), 1; a short key that says to
 * look with the long one, 2; nothing kept, 0. */
static int lookup(cg_hash128 key, char *buf, size_t cap, bool *check) {
  py_site_entry *e = &sites[key.lo % CG_PY_SITES];
  cg_lock(&sites_lock);
  int found = e->used && e->key.lo == key.lo && e->key.hi == key.hi ? (e->deeper ? 2 : 1) : 0;
  if (found == 1 && cap) { /* a copy, not snprintf: this runs at every begin */
    size_t n = strlen(e->site); /* kept NUL-terminated by keep() */
    if (n >= cap)
      n = cap - 1;
    memcpy(buf, e->site, n);
    buf[n] = 0;
  }
  *check = !checked;
  cg_unlock(&sites_lock);
  return found;
}

static void keep(cg_hash128 key, const char *site, bool deeper) {
  py_site_entry *e = &sites[key.lo % CG_PY_SITES];
  cg_lock(&sites_lock);
  e->key = key;
  e->used = true;
  e->deeper = deeper;
  snprintf(e->site, sizeof e->site, "%s", deeper ? "" : site);
  cg_unlock(&sites_lock);
}

void cg_python_site(char *buf, size_t cap) {
  /* No interpreter (yet): nothing to read, and no fingerprint to try. */
  if (!cg_python_maybe()) {
    buf[0] = 0;
    return;
  }
  cg_hash128 key, long_key;
  int named = 0;
  bool whole = false, check;
  int fp = cg_python_fingerprint_short(&key, SHORT_FRAMES, &named, &whole);
  if (fp == CG_PY_FP_NONE) {
    buf[0] = 0;
    return;
  }
  if (fp != CG_PY_FP_OK) {
    site_from_dump(buf, cap);
    return;
  }
  int found = lookup(key, buf, cap, &check);
  if (found == 1)
    return;
  bool have_long = found == 2 && cg_python_fingerprint(&long_key) == CG_PY_FP_OK;
  if (have_long && lookup(long_key, buf, cap, &check) == 1)
    return;
  int pick = site_from_dump(buf, cap);
  if (check) {
    if (!cg_python_fingerprint_check())
      return; /* not kept: the in-place reading is not trusted (yet) */
    cg_lock(&sites_lock);
    checked = true;
    cg_unlock(&sites_lock);
  }
  if (whole || (pick >= 0 && pick < named)) {
    keep(key, buf, false);
    return;
  }
  if (!have_long && cg_python_fingerprint(&long_key) != CG_PY_FP_OK)
    return;
  keep(key, NULL, true);
  keep(long_key, buf, false);
}

void cg_python_site_atfork_child(void) { pthread_mutex_init(&sites_lock, NULL); }
