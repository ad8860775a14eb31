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

/* The innermost frame outside the frameworks' machinery
 * (torch/cuda/graphs.py's capture_begin is not what a person wrote), or the
 * innermost frame when all are, from the dump. */
static void site_from_dump(char *buf, size_t cap) {
  cg_py_frame py[16];
  char text[4096];
  size_t n = cg_python_stack(py, sizeof py / sizeof py[0], text, sizeof text);
  buf[0] = 0;
  if (!n)
    return;
  size_t pick = 0;
  while (pick < n && cg_py_file_is_machinery(py[pick].file))
    pick++;
  if (pick == n)
    pick = 0;
  snprintf(buf, cap, "%s:%d in %s", py[pick].file ? py[pick].file : "?", py[pick].line,
           py[pick].func ? py[pick].func : "?");
}

/* Sites by fingerprint: direct-mapped, bounded; a slot lost to another
 * stack is read again with the dump. */
#define CG_PY_SITES 256
typedef struct {
  cg_hash128 key;
  bool used;
  char site[CG_PY_SITE_MAX];
} py_site_entry;
static py_site_entry sites[CG_PY_SITES];
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
/* The in-place reading is checked against the dump once, on the first
 * stack it fingerprints (cg_python_fingerprint_check). */
static bool checked;

void cg_python_site(char *buf, size_t cap) {
  cg_hash128 key;
  int fp = cg_python_fingerprint(&key);
  if (fp == CG_PY_FP_NONE) {
    buf[0] = 0;
    return;
  }
  if (fp != CG_PY_FP_OK) {
    site_from_dump(buf, cap);
    return;
  }
  py_site_entry *e = &sites[key.lo % CG_PY_SITES];
  pthread_mutex_lock(&sites_lock);
  bool hit = e->used && e->key.lo == key.lo && e->key.hi == key.hi;
  if (hit)
    snprintf(buf, cap, "%s", e->site);
  bool check = !checked;
  pthread_mutex_unlock(&sites_lock);
  if (hit)
    return;
  site_from_dump(buf, cap);
  if (check) {
    if (!cg_python_fingerprint_check())
      return; /* not kept: the in-place reading is not trusted (yet) */
    pthread_mutex_lock(&sites_lock);
    checked = true;
    pthread_mutex_unlock(&sites_lock);
  }
  pthread_mutex_lock(&sites_lock);
  e->key = key;
  e->used = true;
  snprintf(e->site, sizeof e->site, "%s", buf);
  pthread_mutex_unlock(&sites_lock);
}

void cg_python_site_atfork_child(void) { pthread_mutex_init(&sites_lock, NULL); }
