/* Appending to the priming file without reading all of it each time.
 *
 * An appender remembers, for the file it last saw (device and inode), an
 * index of its images (hash, size, offset, loads) and how far it has walked.
 * Each append takes the exclusive lock, reads the file's header and walks
 * only what other processes added since (prime_view.c: read, never mapped,
 * so that a file rewritten in place meanwhile cannot fault the host) (usually a few small records), so recording
 * into a 256 MB file costs the record, not the file: 64 recorders queue for
 * milliseconds, not for 64 re-reads. A rewrite (a new inode) or a file
 * shorter than what was walked starts the index afresh. */
#include "prime_io.h"

#include "capguard/load_options.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
  cg_hash128 hash;
  uint64_t size, off;
  uint64_t bytes_at;   /* where its bytes start in the file */
  uint64_t options_at; /* where its load options start (n_options of them) */
  uint32_t n_options;
  uint32_t module_loads, library_loads;
  bool stated; /* a loads record was seen: the counts replace the default */
} index_entry;

struct cg_prime_appender {
  char path[PATH_MAX];
  uint64_t max_bytes;
  cg_prime_warn_fn warn;
  void *ctx;
  uint64_t dev, ino;    /* the file indexed; 0, 0 before the first walk */
  uint64_t walked_to;   /* everything before this was walked (0: nothing) */
  index_entry *e;       /* file order */
  size_t n, cap;
  uint32_t *slots;      /* open addressing over e: index + 1, 0 free */
  size_t n_slots;       /* a power of two, at least twice n */
  bool nowait;          /* another process holds the lock: return 1 rather than wait */
};

void cg_prime_appender_nowait(cg_prime_appender *a, bool on) { a->nowait = on; }

static size_t slot_of(const cg_prime_appender *a, cg_hash128 h, uint64_t size) {
  return (size_t)(h.lo ^ (size * 0x9e3779b97f4a7c15ull)) & (a->n_slots - 1);
}

static void reset(cg_prime_appender *a) {
  a->n = 0;
  a->walked_to = 0;
  a->dev = a->ino = 0;
  if (a->slots) memset(a->slots, 0, a->n_slots * sizeof *a->slots);
}

static int rehash(cg_prime_appender *a, size_t n_slots) {
  uint32_t *s = calloc(n_slots, sizeof *s);
  if (!s) return -1;
  free(a->slots);
  a->slots = s;
  a->n_slots = n_slots;
  for (size_t i = 0; i < a->n; i++) {
    size_t k = slot_of(a, a->e[i].hash, a->e[i].size);
    while (a->slots[k]) k = (k + 1) & (n_slots - 1);
    a->slots[k] = (uint32_t)i + 1;
  }
  return 0;
}

/* Where an image record's parts are, from its type and fields. */
typedef struct {
  uint64_t bytes_at, options_at;
  uint32_t n_options;
} entry_parts;

static index_entry *add_entry(cg_prime_appender *a, cg_hash128 h, uint64_t size, uint64_t off, entry_parts parts) {
  if (a->n + 1 > a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 64;
    index_entry *e = realloc(a->e, cap * sizeof *e);
    if (!e) return NULL;
    a->e = e;
    a->cap = cap;
  }
  if (2 * (a->n + 1) > a->n_slots && rehash(a, a->n_slots ? a->n_slots * 2 : 128)) return NULL;
  if (a->n >= UINT32_MAX - 1) return NULL;
  index_entry *e = &a->e[a->n];
  *e = (index_entry){h, size, off, parts.bytes_at, parts.options_at, parts.n_options, 1, 0, false};
  size_t k = slot_of(a, h, size);
  while (a->slots[k]) k = (k + 1) & (a->n_slots - 1);
  a->slots[k] = (uint32_t)++a->n;
  return e;
}

/* Whether len bytes at off in the file equal p (filled from the file first
 * when they lie before what was walked). */
static bool file_holds(const prime_view *v, uint64_t off, const void *p, uint64_t len) {
  if (off + len > v->len) return false;
  if (v->fd >= 0) /* before what was walked: not read yet */
    prime_view_fill(v, off, len);
  return !memcmp(v->buf + off, p, len);
}

/* The entry whose bytes and load options in the file equal these, or NULL. */
static index_entry *find(cg_prime_appender *a, const prime_view *v, cg_hash128 h, const void *bytes,
                         uint64_t size, const uint8_t *options, uint32_t n_options) {
  if (!a->n_slots) return NULL;
  for (size_t k = slot_of(a, h, size); a->slots[k]; k = (k + 1) & (a->n_slots - 1)) {
    index_entry *e = &a->e[a->slots[k] - 1];
    if (e->size != size || e->hash.hi != h.hi || e->hash.lo != h.lo || e->n_options != n_options) continue;
    /* Equal hashes are not proof: the bytes decide. */
    if ((!n_options || file_holds(v, e->options_at, options, (uint64_t)n_options * CG_LOAD_OPT_BYTES)) &&
        file_holds(v, e->bytes_at, bytes, size))
      return e;
  }
  return NULL;
}

static entry_parts parts_of(unsigned type, uint64_t off, uint64_t size, uint32_t names_len, uint32_t n_options) {
  return (entry_parts){off + prime_bytes_at(type), off + prime_options_at(type, size, names_len), n_options};
}

static index_entry *entry_at(cg_prime_appender *a, uint64_t off) {
  size_t lo = 0, hi = a->n; /* file order: offsets increase */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (a->e[mid].off < off) lo = mid + 1;
    else hi = mid;
  }
  return lo < a->n && a->e[lo].off == off ? &a->e[lo] : NULL;
}

static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }

typedef struct {
  cg_prime_appender *a;
  const prime_view *v;
  bool oom;
} walk_ctx;

/* Index what the walk finds: images (the first copy of equal bytes only, as
 * the reader folds them) and loads records. Hits change nothing an appender
 * needs. Damaged ranges were reported when the file was loaded. */
static void index_record(void *vctx, const cg_prime_walk_entry *we, const uint8_t *rec) {
  walk_ctx *w = vctx;
  if (w->oom || we->state != CG_PRIME_REC_OK) return;
  cg_prime_appender *a = w->a;
  if (prime_is_image_type(we->type)) {
    cg_hash128 h = {get64(rec + 24), get64(rec + 32)};
    uint64_t size = get64(rec + 40);
    uint32_t n_options = we->type == CG_PRIME_REC_IMAGE_OPTIONS ? get32(rec + 80) : 0;
    entry_parts parts = parts_of(we->type, we->offset, size, get32(rec + 52), n_options);
    const uint8_t *options = rec + (parts.options_at - we->offset);
    if (!find(a, w->v, h, rec + prime_bytes_at(we->type), size, options, n_options) &&
        !add_entry(a, h, size, we->offset, parts))
      w->oom = true;
  } else if (we->type == CG_PRIME_REC_LOADS) {
    index_entry *e = entry_at(a, get64(rec + 16));
    if (!e || e->hash.hi != get64(rec + 24) || e->hash.lo != get64(rec + 32)) return;
    if (!e->stated) e->module_loads = e->library_loads = 0;
    e->stated = true;
    uint32_t m = get32(rec + 40), l = get32(rec + 44);
    if (m > e->module_loads) e->module_loads = m;
    if (l > e->library_loads) e->library_loads = l;
  }
}

cg_prime_appender *cg_prime_appender_new(const char *path, uint64_t max_bytes, const cg_prime_set *seed,
                                         cg_prime_warn_fn warn, void *ctx) {
  cg_prime_appender *a = calloc(1, sizeof *a);
  if (!a || snprintf(a->path, sizeof a->path, "%s", path) >= (int)sizeof a->path) {
    free(a);
    prime_warnf(warn, ctx, path, "cannot record into it (path too long or out of memory)");
    return NULL;
  }
  a->max_bytes = max_bytes;
  a->warn = warn;
  a->ctx = ctx;
  /* A set loaded from this file already walked it: start from there. */
  if (seed && seed->ino && seed->len >= CG_PRIME_HEADER_BYTES) {
    for (size_t i = 0; i < seed->n; i++) {
      const cg_prime_record *r = &seed->recs[i];
      unsigned type = r->n_options ? CG_PRIME_REC_IMAGE_OPTIONS : CG_PRIME_REC_IMAGE;
      index_entry *e =
          add_entry(a, r->hash, r->size, seed->offs[i], parts_of(type, seed->offs[i], r->size, r->names_len, r->n_options));
      if (!e) {
        reset(a);
        return a;
      }
      e->module_loads = r->module_loads;
      e->library_loads = r->library_loads;
      e->stated = r->module_loads != 1 || r->library_loads != 0;
    }
    a->dev = seed->dev;
    a->ino = seed->ino;
    a->walked_to = seed->tail_off;
  }
  return a;
}

void cg_prime_appender_free(cg_prime_appender *a) {
  if (!a) return;
  free(a->e);
  free(a->slots);
  free(a);
}

/* With no index yet, walk the whole file under the shared lock first, so
 * that concurrent appenders each index a large file side by side instead of
 * one after another under the exclusive lock; the exclusive part then walks
 * only what was appended in between. */
static int prewalk(cg_prime_appender *a) {
  struct stat st;
  int fd = prime_open_locked(a->path, false, LOCK_SH, &st, a->warn, a->ctx);
  if (fd == -2) return 0; /* missing: the exclusive part creates it */
  if (fd < 0) return -1;  /* refused, or gave up waiting: said why */
  /* Mapped, not read (prime_view.c): the whole file is walked here, and
   * 64 recorders each copying a 256 MB file would stall one another. The
   * shim's appender is seeded from the set it read (no walk here) unless
   * the file was created, or first became readable, during its run. */
  uint8_t *map = NULL;
  size_t len = (size_t)st.st_size;
  unsigned version;
  if ((uint64_t)st.st_size <= a->max_bytes && !prime_map(fd, len, &map, a->path, NULL, NULL) && map &&
      prime_check_header(map, len, &version) == PRIME_HDR_OK) {
    prime_view v = {map, len, -1}; /* all of it there: nothing to fill */
    walk_ctx w = {a, &v, false};
    a->walked_to = prime_walk(map, len, 0, index_record, &w, NULL, NULL);
    a->dev = (uint64_t)st.st_dev;
    a->ino = (uint64_t)st.st_ino;
    if (w.oom) reset(a);
  }
  if (map) munmap(map, len);
  close(fd);
  return 0;
}

/* Under the exclusive lock: the file read (v: its header and what was not
 * walked yet) and indexed up to its last intact record, where a new record
 * goes (*at); *need_header when the file is empty or its header torn. -1,
 * said why, when nothing can be recorded. */
static int index_file(cg_prime_appender *a, int fd, const struct stat *st, prime_view *v, uint64_t *at,
                      bool *need_header, unsigned *version) {
  size_t len = (size_t)st->st_size;
  if ((uint64_t)st->st_dev != a->dev || (uint64_t)st->st_ino != a->ino || len < a->walked_to) reset(a);
  if (prime_view_open(v, fd, len, a->path, a->warn, a->ctx)) return -1;
  prime_view_fill(v, 0, CG_PRIME_HEADER_BYTES);
  prime_hdr_state hs = len ? prime_check_header(v->buf, len, version) : PRIME_HDR_EMPTY;
  *need_header = hs == PRIME_HDR_EMPTY || hs == PRIME_HDR_TORN;
  if (!*need_header && prime_refuse_header(v->buf, len, a->path, a->warn, a->ctx)) return -1;
  *at = 0;
  if (*need_header) {
    reset(a);
  } else {
    prime_view_fill(v, a->walked_to, len - (a->walked_to < len ? a->walked_to : len));
    walk_ctx w = {a, v, false};
    *at = prime_walk(v->buf, len, a->walked_to, index_record, &w, NULL, NULL);
    if (w.oom) {
      prime_warnf(a->warn, a->ctx, a->path, "out of memory indexing it; nothing recorded");
      reset(a);
      return -1;
    }
  }
  a->dev = (uint64_t)st->st_dev;
  a->ino = (uint64_t)st->st_ino;
  return 0;
}

/* rec (total bytes) written at at, the end of the last intact record of a
 * file len bytes long. -1, said why, when it was not. */
static int write_at_tail(cg_prime_appender *a, int fd, const uint8_t *rec, uint64_t total, uint64_t at,
                         size_t len) {
  if (at < len) {
    /* A torn tail (an interrupted append) follows the last intact record:
     * the new record goes where it began. */
    if (ftruncate(fd, (off_t)at) != 0) {
      prime_warnf(a->warn, a->ctx, a->path, "cannot drop its incomplete last record (%s); nothing recorded",
                  strerror(errno));
      return -1;
    }
    prime_warnf(a->warn, a->ctx, a->path, "dropped %llu bytes of an incomplete last record",
                (unsigned long long)(len - at));
  }
  /* One pwrite of the whole record at the end, under the lock: readers see
   * all of it or a torn tail they skip. No fsync: this is a cache, a record
   * lost to a power cut costs one more warning on the next run, while an
   * fsync on every append would stall the user's process. */
  if (prime_write_at(fd, rec, total, at) != 0) {
    int err = errno;
    if (ftruncate(fd, (off_t)at) != 0) { /* best effort: the walk skips a torn tail anyway */ }
    prime_warnf(a->warn, a->ctx, a->path, "write failed (%s); nothing recorded", strerror(err));
    reset(a);
    return -1;
  }
  return 0;
}

/* A version-1 file that now holds an image record with options says
 * version 2, so that a capguard before options refuses it whole rather than
 * serve its loads without the options they were made with. Its creation
 * time stays. -1, said why, when the header could not be written (the
 * record stays: this capguard reads it whatever the header says). */
static int upgrade_header(cg_prime_appender *a, int fd, const prime_view *v) {
  uint64_t created;
  memcpy(&created, v->buf + 16, 8);
  uint8_t hdr[CG_PRIME_HEADER_BYTES];
  prime_encode_header(hdr, le64toh(created), PRIME_VERSION);
  if (prime_write_at(fd, hdr, sizeof hdr, 0) == 0) return 0;
  prime_warnf(a->warn, a->ctx, a->path, "cannot mark it version %u (%s)", PRIME_VERSION, strerror(errno));
  return -1;
}

/* r appended: its image when the file lacks it, else a hit record (when
 * hit) and a loads record when r needs more copies than the file states. */
static int append(cg_prime_appender *a, const cg_prime_record *r, bool hit) {
  /* Without waiting, the whole walk (when there is no index yet) is done
   * under the exclusive lock below, taken only when it is free. */
  if (!a->walked_to && !a->nowait && prewalk(a)) return -1;
  const char *path = a->path;
  cg_prime_warn_fn warn = a->warn;
  void *ctx = a->ctx;
  if (!prime_record_ok(r)) {
    prime_warnf(warn, ctx, path,
                "asked to record an inconsistent image (hash, size or kernel names); nothing "
                "recorded: this is a capguard bug, please report it");
    return -1;
  }
  struct stat st;
  int fd = a->nowait ? prime_open_locked_nowait(path, true, LOCK_EX, &st, warn, ctx)
                     : prime_open_locked(path, true, LOCK_EX, &st, warn, ctx);
  if (fd == -3) return 1;
  if (fd < 0) return -1;
  int rc = -1;
  uint8_t *rec = NULL;
  prime_view v = {NULL, 0, fd};
  size_t len = (size_t)st.st_size;
  if ((uint64_t)st.st_size > a->max_bytes) {
    prime_warnf(warn, ctx, path,
                "already %zu bytes, over the %llu-byte cap; nothing recorded: raise "
                "CAPGUARD_PRIME_MAX or run 'capguard prime prune %s'",
                len, (unsigned long long)a->max_bytes, path);
    goto out;
  }
  uint64_t at; /* where the record goes: after the last intact record */
  bool need_header;
  unsigned version = 0;
  if (index_file(a, fd, &st, &v, &at, &need_header, &version)) goto out;

  uint64_t hits = r->hits ? r->hits : 1, t = r->last_ns ? r->last_ns : cg_now_ns();
  index_entry *have = need_header ? NULL : find(a, &v, r->hash, r->bytes, r->size, r->options, r->n_options);
  /* The loads the file will state for the image: the larger of what it
   * states now and what this process needed. A loads record is written only
   * when that differs from what the file already says (for a new image: from
   * the version-1 default), so version-1 readers meet one only when it
   * matters. */
  uint32_t want_m, want_l, have_m = have ? have->module_loads : 1, have_l = have ? have->library_loads : 0;
  prime_effective_loads(r, &want_m, &want_l);
  if (have && want_m < have_m) want_m = have_m;
  if (have && want_l < have_l) want_l = have_l;
  bool loads_rec = want_m != have_m || want_l != have_l;
  if (have && !hit && !loads_rec) { /* the file says it all already */
    rc = 0;
    goto out;
  }
  uint64_t body_len = have ? (hit ? PRIME_HIT_LEN : 0) : prime_image_len(r);
  uint64_t total = (need_header ? CG_PRIME_HEADER_BYTES : 0) + body_len + (loads_rec ? PRIME_LOADS_LEN : 0);
  if (at + total > a->max_bytes) {
    prime_warnf(warn, ctx, path,
                "full (%llu of %llu bytes); %s of %llu bytes not recorded: raise "
                "CAPGUARD_PRIME_MAX or run 'capguard prime prune %s'",
                (unsigned long long)at, (unsigned long long)a->max_bytes,
                have ? (hit ? "a hit for an image" : "a count of copies for an image") : "an image",
                (unsigned long long)r->size, path);
    goto out;
  }
  rec = malloc(total);
  if (!rec) {
    prime_warnf(warn, ctx, path, "out of memory; nothing recorded");
    goto out;
  }
  if (need_header) prime_encode_header(rec, cg_now_ns(), prime_version_for(r));
  uint8_t *body = rec + (need_header ? CG_PRIME_HEADER_BYTES : 0);
  uint64_t image_off = have ? have->off : at + (uint64_t)(body - rec);
  if (have) {
    if (hit) prime_encode_hit(body, image_off, r->hash, hits, t);
  } else {
    cg_prime_record copy = *r;
    copy.hits = hits;
    copy.last_ns = t;
    copy.first_ns = r->first_ns ? r->first_ns : t;
    prime_encode_image(body, &copy);
  }
  if (loads_rec) prime_encode_loads(body + body_len, image_off, r->hash, want_m, want_l, t);
  if (write_at_tail(a, fd, rec, total, at, len)) goto out;
  if (!have && !need_header && version < prime_version_for(r) && upgrade_header(a, fd, &v)) goto out;
  unsigned type = r->n_options ? CG_PRIME_REC_IMAGE_OPTIONS : CG_PRIME_REC_IMAGE;
  index_entry *e = have ? have
                        : add_entry(a, r->hash, r->size, image_off,
                                    parts_of(type, image_off, r->size, r->names_len, r->n_options));
  if (e && loads_rec) {
    e->module_loads = want_m;
    e->library_loads = want_l;
    e->stated = true;
  }
  if (e) a->walked_to = at + total;
  else reset(a); /* out of memory for the index: the next append walks afresh */
  rc = 0;
out:
  free(rec);
  prime_view_close(&v);
  close(fd); /* drops the lock */
  return rc;
}

int cg_prime_appender_add(cg_prime_appender *a, const cg_prime_record *r) { return append(a, r, true); }

int cg_prime_appender_raise_loads(cg_prime_appender *a, const cg_prime_record *r) { return append(a, r, false); }

int cg_prime_append(const char *path, const cg_prime_record *r, uint64_t max_bytes, cg_prime_warn_fn warn,
                    void *ctx) {
  cg_prime_appender *a = cg_prime_appender_new(path, max_bytes, NULL, warn, ctx);
  if (!a) return -1;
  int rc = cg_prime_appender_add(a, r);
  cg_prime_appender_free(a);
  return rc;
}
