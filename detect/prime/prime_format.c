/* The priming file's bytes: header, records, checksums, the walk that finds
 * intact records among damaged ones, and parsing into a cg_prime_set.
 * Layout and rationale: docs/priming-format.md. No file I/O here, so the
 * fuzzer drives exactly the code that cg_prime_load runs. */
#include "prime_format.h"
#include "capguard/char_class.h"

#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "capguard/load_options.h"

/* PNG-style: a high byte, a name, CR LF, ^Z, LF, so that text-mode transfers
 * and truncation to 7 bits are caught by the magic itself. */
const uint8_t prime_magic[8] = {0x89, 'C', 'G', 'P', '\r', '\n', 0x1a, '\n'};

/* The conventional libFuzzer switch, never set in a normal build: checksums
 * and hashes are not checked, so that mutated inputs reach the field checks
 * behind them, which are what guard every read. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define FUZZ_NO_CHECKSUMS 1
#else
#define FUZZ_NO_CHECKSUMS 0
#endif

static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }
static void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

void prime_warnf(cg_prime_warn_fn warn, void *ctx, const char *path, const char *fmt, ...) {
  if (!warn) return;
  char line[1024];
  int n = snprintf(line, sizeof line, "capguard: priming file %s: ", path ? path : "(memory)");
  if (n < 0 || (size_t)n >= sizeof line) n = (int)strlen(line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* One line, whatever the path holds. */
  for (char *c = line; *c; c++)
    if (cg_is_control((unsigned char)*c)) *c = '?';
  warn(ctx, line);
}

/* ---- header ---- */

void prime_encode_header(uint8_t out[CG_PRIME_HEADER_BYTES], uint64_t created_ns, unsigned version) {
  memcpy(out, prime_magic, 8);
  put16(out + 8, (uint16_t)version);
  put16(out + 10, CG_PRIME_HEADER_BYTES);
  put32(out + 12, 0);
  put64(out + 16, created_ns);
  put64(out + 24, XXH3_64bits(out, 24));
}

prime_hdr_state prime_check_header(const uint8_t *buf, size_t len, unsigned *version) {
  *version = 0;
  if (len == 0) return PRIME_HDR_EMPTY;
  if (memcmp(buf, prime_magic, len < 8 ? len : 8) != 0) return PRIME_HDR_FOREIGN;
  if (len < 10) return PRIME_HDR_TORN;
  /* The version is read before anything else is trusted: a newer format may
   * lay out the rest of its header differently. */
  *version = get16(buf + 8);
  if (*version > PRIME_VERSION) return PRIME_HDR_NEWER;
  if (*version == 0) return PRIME_HDR_DAMAGED;
  if (len < CG_PRIME_HEADER_BYTES) return PRIME_HDR_TORN;
  if (get16(buf + 10) != CG_PRIME_HEADER_BYTES || get32(buf + 12) != 0 ||
      get64(buf + 24) != XXH3_64bits(buf, 24))
    return PRIME_HDR_DAMAGED;
  return PRIME_HDR_OK;
}

/* ---- records ---- */

unsigned prime_version_for(const cg_prime_record *r) { return r->n_options ? PRIME_VERSION : PRIME_VERSION_PLAIN; }

bool prime_is_image_type(unsigned type) { return type == CG_PRIME_REC_IMAGE || type == CG_PRIME_REC_IMAGE_OPTIONS; }

uint64_t prime_bytes_at(unsigned type) {
  return type == CG_PRIME_REC_IMAGE_OPTIONS ? PRIME_IMAGE_OPTIONS_FIXED : PRIME_IMAGE_FIXED;
}

uint64_t prime_options_at(unsigned type, uint64_t size, uint64_t names_len) {
  return prime_bytes_at(type) + pad8(size) + pad8(names_len);
}

static uint64_t image_len(unsigned type, uint64_t size, uint64_t names_len, uint64_t n_options) {
  return prime_options_at(type, size, names_len) + n_options * CG_LOAD_OPT_BYTES + 8;
}

uint64_t prime_image_len(const cg_prime_record *r) {
  return image_len(r->n_options ? CG_PRIME_REC_IMAGE_OPTIONS : CG_PRIME_REC_IMAGE, r->size, r->names_len,
                   r->n_options);
}

static void seal(uint8_t *rec, uint64_t len) { put64(rec + len - 8, XXH3_64bits(rec, len - 8)); }

static void put_head(uint8_t *rec, unsigned type, uint64_t len) {
  put32(rec, PRIME_REC_MAGIC);
  put16(rec + 4, (uint16_t)type);
  put16(rec + 6, 0);
  put64(rec + 8, len);
}

void prime_encode_image(uint8_t *out, const cg_prime_record *r) {
  unsigned type = r->n_options ? CG_PRIME_REC_IMAGE_OPTIONS : CG_PRIME_REC_IMAGE;
  uint64_t len = prime_image_len(r), at = prime_bytes_at(type);
  memset(out, 0, len); /* padding is zero, so equal records encode equally */
  put_head(out, type, len);
  put32(out + 16, (uint32_t)r->kind);
  put32(out + 20, r->sm_arch);
  put64(out + 24, r->hash.hi);
  put64(out + 32, r->hash.lo);
  put64(out + 40, r->size);
  put32(out + 48, r->n_kernels);
  put32(out + 52, r->names_len);
  put64(out + 56, r->hits);
  put64(out + 64, r->first_ns);
  put64(out + 72, r->last_ns);
  if (r->n_options) put32(out + 80, r->n_options); /* and 84: reserved, zero */
  memcpy(out + at, r->bytes, r->size);
  if (r->names_len) memcpy(out + at + pad8(r->size), r->kernel_names, r->names_len);
  if (r->n_options)
    memcpy(out + prime_options_at(type, r->size, r->names_len), r->options, (size_t)r->n_options * CG_LOAD_OPT_BYTES);
  seal(out, len);
}

void prime_encode_hit(uint8_t out[PRIME_HIT_LEN], uint64_t image_off, cg_hash128 h,
                      uint64_t hits, uint64_t last_ns) {
  put_head(out, CG_PRIME_REC_HIT, PRIME_HIT_LEN);
  put64(out + 16, image_off);
  put64(out + 24, h.hi);
  put64(out + 32, h.lo);
  put64(out + 40, hits);
  put64(out + 48, last_ns);
  seal(out, PRIME_HIT_LEN);
}

void prime_encode_loads(uint8_t out[PRIME_LOADS_LEN], uint64_t image_off, cg_hash128 h,
                        uint32_t module_loads, uint32_t library_loads, uint64_t last_ns) {
  put_head(out, CG_PRIME_REC_LOADS, PRIME_LOADS_LEN);
  put64(out + 16, image_off);
  put64(out + 24, h.hi);
  put64(out + 32, h.lo);
  put32(out + 40, module_loads);
  put32(out + 44, library_loads);
  put64(out + 48, last_ns);
  seal(out, PRIME_LOADS_LEN);
}

void prime_effective_loads(const cg_prime_record *r, uint32_t *module_loads, uint32_t *library_loads) {
  bool legacy = r->module_loads == 0 && r->library_loads == 0;
  *module_loads = legacy ? 1 : r->module_loads;
  *library_loads = legacy ? 0 : r->library_loads;
}

bool prime_needs_loads_record(const cg_prime_record *r) {
  uint32_t m, l;
  prime_effective_loads(r, &m, &l);
  return m != 1 || l != 0;
}

/* Counts NUL-terminated names in names[0, len); -1 if the last is unterminated. */
static int64_t count_names(const uint8_t *names, uint64_t len) {
  if (len == 0) return 0;
  if (names[len - 1] != 0) return -1;
  int64_t n = 0;
  for (uint64_t i = 0; i < len; i++) n += names[i] == 0;
  return n;
}

/* What a walk carries through its checks: the work it may still spend (see
 * prime_walk) and where to say how far it has read. */
typedef struct {
  const uint8_t *buf;
  uint64_t len, budget;
  cg_prime_progress_fn progress;
  void *pctx;
} walker;

/* Hashing a large record in slices, telling progress after each: a mapped
 * file's reader drops the pages behind it, so checking a 200 MB image keeps
 * a slice resident, not 200 MB. Streaming XXH3 equals the one-shot hash. */
#define HASH_SLICE ((uint64_t)8 << 20)

static uint64_t sum64(const walker *w, const uint8_t *p, uint64_t n) {
  if (n <= HASH_SLICE || !w->progress) return XXH3_64bits(p, n);
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  for (uint64_t done = 0; done < n; done += HASH_SLICE) {
    XXH3_64bits_update(&st, p + done, n - done < HASH_SLICE ? n - done : HASH_SLICE);
    w->progress(w->pctx, (uint64_t)(p - w->buf) + done, w->len);
  }
  return XXH3_64bits_digest(&st);
}

static cg_hash128 sum128(const walker *w, const uint8_t *p, uint64_t n) {
  if (n <= HASH_SLICE || !w->progress) return cg_hash_bytes(p, n);
  XXH3_state_t st;
  XXH3_128bits_reset(&st);
  for (uint64_t done = 0; done < n; done += HASH_SLICE) {
    XXH3_128bits_update(&st, p + done, n - done < HASH_SLICE ? n - done : HASH_SLICE);
    w->progress(w->pctx, (uint64_t)(p - w->buf) + done, w->len);
  }
  XXH128_hash_t h = XXH3_128bits_digest(&st);
  return (cg_hash128){.hi = h.high64, .lo = h.low64};
}

/* Fields of an image record whose checksum is already good: a writer bug or a
 * forged file could still make them inconsistent. */
static const char *check_image(const walker *w, const uint8_t *rec, uint64_t len, unsigned type) {
  /* First: the fixed fields must lie inside the record before any is read. */
  uint64_t at = prime_bytes_at(type);
  if (len < at + 8) return "image record too short";
  uint32_t kind = get32(rec + 16);
  uint64_t size = get64(rec + 40);
  uint32_t n_kernels = get32(rec + 48), names_len = get32(rec + 52);
  uint32_t n_options = type == CG_PRIME_REC_IMAGE_OPTIONS ? get32(rec + 80) : 0;
  if (kind > CG_IMAGE_PTX) return "unknown image kind";
  if (size == 0 || size > CG_IMAGE_MAX_BYTES) return "image size out of range";
  if (names_len > PRIME_MAX_NAMES) return "kernel names too long";
  if (type == CG_PRIME_REC_IMAGE_OPTIONS && (n_options == 0 || n_options > CG_LOAD_OPTS_MAX || get32(rec + 84)))
    return "options count out of range";
  if (image_len(type, size, names_len, n_options) != len) return "record length does not match its fields";
  if (count_names(rec + at + pad8(size), names_len) != (int64_t)n_kernels)
    return "kernel names do not match their count";
  cg_load_opts opts;
  if (n_options && cg_load_opts_decode(rec + prime_options_at(type, size, names_len), n_options, &opts))
    return "load options not in canonical form";
  cg_hash128 h = sum128(w, rec + at, size);
  if (!FUZZ_NO_CHECKSUMS && (h.hi != get64(rec + 24) || h.lo != get64(rec + 32)))
    return "image hash does not match its bytes";
  return NULL;
}

/* ---- the identity record (type 5) ---- */

static uint64_t identity_len(uint64_t program_len, uint64_t label_len) {
  return PRIME_IDENTITY_FIXED + pad8(program_len) + pad8(label_len) + 8;
}

uint64_t prime_identity_len(const cg_prime_identity *id) {
  return identity_len(strnlen(id->program, CG_PRIME_PROGRAM_MAX - 1), strnlen(id->label, CG_PRIME_LABEL_MAX - 1));
}

void prime_encode_identity(uint8_t *out, const cg_prime_identity *id) {
  uint32_t p = (uint32_t)strnlen(id->program, CG_PRIME_PROGRAM_MAX - 1);
  uint32_t l = (uint32_t)strnlen(id->label, CG_PRIME_LABEL_MAX - 1);
  uint64_t len = identity_len(p, l);
  memset(out, 0, len);
  put_head(out, CG_PRIME_REC_IDENTITY, len);
  put32(out + 16, id->format_version);
  put32(out + 20, id->driver_version);
  put32(out + 24, id->device_sm);
  put64(out + 32, id->written_ns);
  put32(out + 40, p);
  put32(out + 44, l);
  memcpy(out + PRIME_IDENTITY_FIXED, id->program, p);
  memcpy(out + PRIME_IDENTITY_FIXED + pad8(p), id->label, l);
  seal(out, len);
}

/* Sizes that fit their record, strings without a NUL inside, padding and
 * the reserved word zero: anything else is damage, never a misread name. */
static const char *check_identity(const uint8_t *rec, uint64_t len) {
  if (len < PRIME_IDENTITY_FIXED + 8) return "identity record too short";
  uint32_t p = get32(rec + 40), l = get32(rec + 44);
  if (p >= CG_PRIME_PROGRAM_MAX || l >= CG_PRIME_LABEL_MAX) return "identity strings too long";
  if (len != identity_len(p, l)) return "identity record length does not match its strings";
  if (get32(rec + 28)) return "identity reserved field not zero";
  const uint8_t *prog = rec + PRIME_IDENTITY_FIXED, *label = prog + pad8(p);
  if (memchr(prog, 0, p) || memchr(label, 0, l)) return "identity string holds a NUL";
  for (uint64_t i = p; i < pad8(p); i++)
    if (prog[i]) return "identity padding not zero";
  for (uint64_t i = l; i < pad8(l); i++)
    if (label[i]) return "identity padding not zero";
  return NULL;
}

static void decode_identity(cg_prime_identity *id, const uint8_t *rec) {
  uint32_t p = get32(rec + 40), l = get32(rec + 44);
  *id = (cg_prime_identity){.format_version = get32(rec + 16), .driver_version = get32(rec + 20),
                            .device_sm = get32(rec + 24), .written_ns = get64(rec + 32)};
  memcpy(id->program, rec + PRIME_IDENTITY_FIXED, p);
  memcpy(id->label, rec + PRIME_IDENTITY_FIXED + pad8(p), l);
}

/* NULL when a whole, intact record starts at off; else why not. Reads only
 * buf[off, len): the length field is checked against what is there before use.
 * Checking costs up to twice the claimed length (checksum, image hash), taken
 * from *budget: see prime_walk. */
static const char *check_record(walker *w, uint64_t off, uint64_t *rlen, unsigned *type) {
  const uint8_t *buf = w->buf;
  uint64_t room = w->len - off;
  if (room < PRIME_REC_HEAD) return "incomplete record header";
  const uint8_t *rec = buf + off;
  if (get32(rec) != PRIME_REC_MAGIC) return "no record marker";
  uint64_t l = get64(rec + 8);
  if (l < PRIME_MIN_REC || l % 8) return "impossible record length";
  if (l > room) return "record runs past the end of the file";
  if (2 * l > w->budget) return "not checked: the file's damage exceeds what a walk may spend on it";
  w->budget -= 2 * l;
  if (!FUZZ_NO_CHECKSUMS && get64(rec + l - 8) != sum64(w, rec, l - 8))
    return "checksum mismatch";
  if (get16(rec + 6) != 0) return "reserved field not zero";
  *rlen = l;
  *type = get16(rec + 4);
  if (prime_is_image_type(*type)) return check_image(w, rec, l, *type);
  if (*type == CG_PRIME_REC_HIT && l != PRIME_HIT_LEN) return "hit record of wrong length";
  if (*type == CG_PRIME_REC_LOADS && l != PRIME_LOADS_LEN) return "loads record of wrong length";
  if (*type == CG_PRIME_REC_IDENTITY) return check_identity(rec, l);
  return NULL; /* an unknown type is intact; the reader decides */
}

/* Linear in the file's size, however it is damaged. Every candidate record
 * costs up to twice its claimed length to check, and a crafted file can put
 * a marker claiming a long record every 8 bytes, each making the walk hash
 * to the end of the file again (quadratic: minutes for a few MiB). So a walk
 * spends at most WALK_BUDGET(len) bytes of checking in all: intact records,
 * which never overlap, need at most 2 * len of it; the rest is for damage.
 * Only a file whose damage needs more than that (never an interrupted or
 * bit-flipped one) has candidates that go unchecked, and count as damage. */
#define WALK_BUDGET(len) (4 * (uint64_t)(len) + ((uint64_t)1 << 20))

uint64_t prime_walk(const uint8_t *buf, size_t len, uint64_t start, prime_walk_cb each, void *ctx,
                    cg_prime_progress_fn progress, void *pctx) {
  const uint64_t step = 8u << 20;
  uint64_t off = start < CG_PRIME_HEADER_BYTES ? CG_PRIME_HEADER_BYTES : start, next_report = off + step;
  walker w = {buf, len, WALK_BUDGET(len - (off < len ? off : len)), progress, pctx};
  while (off < len) {
    if (progress && off >= next_report) {
      progress(pctx, off, len);
      next_report = off + step;
    }
    uint64_t l = 0;
    unsigned type = 0;
    const char *why = check_record(&w, off, &l, &type);
    if (!why) {
      cg_prime_walk_entry e = {off, l, CG_PRIME_REC_OK, type, NULL};
      each(ctx, &e, buf + off);
      off += l;
      continue;
    }
    /* Resynchronise: records start 8-aligned, so look for the next aligned
     * record marker that begins an intact record. Only if none exists is this
     * a torn tail; damage in the middle never costs the records after it. */
    uint64_t p = off + 8, l2;
    unsigned t2;
    while (p + PRIME_MIN_REC <= len &&
           (get32(buf + p) != PRIME_REC_MAGIC || check_record(&w, p, &l2, &t2)))
      p += 8;
    if (p + PRIME_MIN_REC > len) {
      cg_prime_walk_entry e = {off, len - off, CG_PRIME_REC_TORN, 0, why};
      each(ctx, &e, NULL);
      return off;
    }
    cg_prime_walk_entry e = {off, p - off, CG_PRIME_REC_DAMAGED, 0, why};
    each(ctx, &e, NULL);
    off = p;
  }
  if (progress) progress(pctx, len, len);
  return len;
}

/* ---- parsing into a set ---- */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

typedef struct {
  uint64_t target, hits, last_ns;
  cg_hash128 hash;
} pending_hit;

typedef struct {
  uint64_t target;
  cg_hash128 hash;
  uint32_t module_loads, library_loads;
} pending_loads;

typedef struct {
  cg_prime_set *set;
  size_t cap, cap_offs;
  pending_hit *hits;
  size_t n_hits, cap_hits;
  pending_loads *loads;
  size_t n_loads, cap_loads;
  const char *path;
  bool quiet, oom;
  cg_prime_warn_fn warn;
  void *ctx;
} collector;

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap * 2 : 16;
  if (n < need) n = need;
  void *q = realloc(*p, n * elem);
  if (!q) return false;
  *p = q;
  *cap = n;
  return true;
}

static void decode_image(cg_prime_record *r, const uint8_t *rec, unsigned type) {
  uint64_t at = prime_bytes_at(type);
  r->kind = (cg_image_kind)get32(rec + 16);
  r->sm_arch = get32(rec + 20);
  r->hash = (cg_hash128){get64(rec + 24), get64(rec + 32)};
  r->size = get64(rec + 40);
  r->n_kernels = get32(rec + 48);
  r->names_len = get32(rec + 52);
  r->hits = get64(rec + 56);
  r->first_ns = get64(rec + 64);
  r->last_ns = get64(rec + 72);
  r->bytes = rec + at;
  r->kernel_names = r->names_len ? (const char *)rec + at + pad8(r->size) : "";
  r->n_options = type == CG_PRIME_REC_IMAGE_OPTIONS ? get32(rec + 80) : 0;
  r->options = r->n_options ? rec + prime_options_at(type, r->size, r->names_len) : NULL;
  r->module_loads = 1; /* until a loads record says otherwise */
  r->library_loads = 0;
}

static void collect(void *vctx, const cg_prime_walk_entry *e, const uint8_t *rec) {
  collector *c = vctx;
  cg_prime_set *s = c->set;
  if (c->oom) return;
  if (e->state != CG_PRIME_REC_OK) {
    s->n_bad++;
    if (c->quiet) return;
    if (e->state == CG_PRIME_REC_TORN)
      prime_warnf(c->warn, c->ctx, c->path,
                  "last %llu bytes from offset %llu are an incomplete record (%s; an interrupted "
                  "write?), skipped; the next write to the file drops them",
                  (unsigned long long)e->length, (unsigned long long)e->offset, e->why);
    else
      prime_warnf(c->warn, c->ctx, c->path,
                  "record at offset %llu damaged (%s), %llu bytes skipped; run 'capguard prime "
                  "prune %s' to rewrite the file without it",
                  (unsigned long long)e->offset, e->why, (unsigned long long)e->length, c->path);
    return;
  }
  if (prime_is_image_type(e->type)) {
    if (!grow((void **)&s->recs, &c->cap, s->n + 1, sizeof *s->recs) ||
        !grow((void **)&s->offs, &c->cap_offs, s->n + 1, sizeof *s->offs)) {
      c->oom = true;
      return;
    }
    s->offs[s->n] = e->offset;
    decode_image(&s->recs[s->n++], rec, e->type);
  } else if (e->type == CG_PRIME_REC_HIT) {
    if (!grow((void **)&c->hits, &c->cap_hits, c->n_hits + 1, sizeof *c->hits)) { c->oom = true; return; }
    c->hits[c->n_hits++] = (pending_hit){get64(rec + 16), get64(rec + 40), get64(rec + 48),
                                         {get64(rec + 24), get64(rec + 32)}};
  } else if (e->type == CG_PRIME_REC_LOADS) {
    if (!grow((void **)&c->loads, &c->cap_loads, c->n_loads + 1, sizeof *c->loads)) { c->oom = true; return; }
    c->loads[c->n_loads++] = (pending_loads){get64(rec + 16), {get64(rec + 24), get64(rec + 32)},
                                             get32(rec + 40), get32(rec + 44)};
  } else if (e->type == CG_PRIME_REC_IDENTITY) {
    s->has_identity = true; /* the last one wins: a later learn into the same file */
    decode_identity(&s->identity, rec);
  } else if (!c->quiet) {
    prime_warnf(c->warn, c->ctx, c->path,
                "record at offset %llu has type %u, unknown to this capguard, ignored; a newer "
                "capguard wrote it, upgrade to use it",
                (unsigned long long)e->offset, e->type);
  }
}

static cg_prime_record *entry_at(cg_prime_set *s, uint64_t off) {
  size_t lo = 0, hi = s->n; /* offs are increasing: records are in file order */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->offs[mid] < off) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->n && s->offs[lo] == off ? &s->recs[lo] : NULL;
}

static int cmp_hash(cg_hash128 a, uint64_t as, cg_hash128 b, uint64_t bs) {
  if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
  if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
  if (as != bs) return as < bs ? -1 : 1;
  return 0;
}

/* Index order: (hash, size), then position, so the first of equals comes
 * first. Sorted as keys that carry their position, with qsort: qsort_r
 * alone needed the version name GLIBC_2.8 in the shim, and each version name
 * is checked at every process's start-up (about 500 instructions). */
typedef struct {
  cg_hash128 hash;
  uint64_t size;
  size_t at;
} index_key;

static int cmp_index(const void *a, const void *b) {
  const index_key *ka = a, *kb = b;
  int c = cmp_hash(ka->hash, ka->size, kb->hash, kb->size);
  return c ? c : (ka->at > kb->at) - (ka->at < kb->at);
}

static size_t *sorted_index(const cg_prime_record *recs, size_t n) {
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  index_key *keys = malloc((n ? n : 1) * sizeof *keys);
  if (!idx || !keys) {
    free(idx);
    free(keys);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) keys[i] = (index_key){recs[i].hash, recs[i].size, i};
  qsort(keys, n, sizeof *keys, cmp_index);
  for (size_t i = 0; i < n; i++) idx[i] = keys[i].at;
  free(keys);
  return idx;
}

size_t prime_fold_dups(cg_prime_record *recs, uint64_t *offs, size_t n) {
  size_t *idx = sorted_index(recs, n);
  size_t *reps = malloc((n ? n : 1) * sizeof *reps), n_reps = 0;
  bool *gone = calloc(n ? n : 1, sizeof *gone);
  if (!idx || !reps || !gone) {
    free(idx), free(reps), free(gone);
    return (size_t)-1;
  }
  /* Within each run of equal (hash, size), compare against the distinct
   * contents seen so far in that run (one, unless XXH3-128 collides): linear
   * however many copies a hostile file holds. Hashes are never proof. */
  for (size_t i = 0; i < n; i++) {
    const cg_prime_record *b = &recs[idx[i]];
    if (i == 0 || cmp_hash(recs[reps[0]].hash, recs[reps[0]].size, b->hash, b->size)) n_reps = 0;
    size_t k = 0;
    while (k < n_reps && !cg_prime_same_entry(&recs[reps[k]], b->bytes, b->size, b->options, b->n_options)) k++;
    if (k < n_reps) {
      cg_prime_record *a = &recs[reps[k]];
      a->hits = sat_add(a->hits, b->hits);
      if (b->first_ns < a->first_ns) a->first_ns = b->first_ns;
      if (b->last_ns > a->last_ns) a->last_ns = b->last_ns;
      /* Loads are the most one process needed, not a total: the larger wins. */
      uint32_t am, al, bm, bl;
      prime_effective_loads(a, &am, &al);
      prime_effective_loads(b, &bm, &bl);
      a->module_loads = am > bm ? am : bm;
      a->library_loads = al > bl ? al : bl;
      gone[idx[i]] = true;
    } else {
      reps[n_reps++] = idx[i];
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (gone[i]) continue;
    recs[kept] = recs[i];
    if (offs) offs[kept] = offs[i];
    kept++;
  }
  free(idx), free(reps), free(gone);
  return kept;
}

static cg_prime_record *named_image(cg_prime_set *s, uint64_t off, cg_hash128 h) {
  cg_prime_record *r = entry_at(s, off);
  return r && r->hash.hi == h.hi && r->hash.lo == h.lo ? r : NULL;
}

/* Hit records add to the image they name (by offset, hash checked); loads
 * records replace the version-1 default of their image with the largest
 * counts any of them states; images stored twice (files concatenated by
 * hand, say) fold into the first. A hit or loads record whose image was
 * damaged is dropped with it, silently: the image's own warning already told
 * the user. */
static int index_and_fold(cg_prime_set *s, const pending_hit *hits, size_t n_hits,
                          const pending_loads *loads, size_t n_loads) {
  for (size_t i = 0; i < n_hits; i++) {
    cg_prime_record *r = named_image(s, hits[i].target, hits[i].hash);
    if (!r) continue;
    r->hits = sat_add(r->hits, hits[i].hits);
    if (hits[i].last_ns > r->last_ns) r->last_ns = hits[i].last_ns;
  }
  bool *stated = n_loads ? calloc(s->n ? s->n : 1, sizeof *stated) : NULL;
  if (n_loads && !stated) return -1;
  for (size_t i = 0; i < n_loads; i++) {
    cg_prime_record *r = named_image(s, loads[i].target, loads[i].hash);
    if (!r) continue;
    if (!stated[r - s->recs]) {
      stated[r - s->recs] = true;
      r->module_loads = r->library_loads = 0;
    }
    if (loads[i].module_loads > r->module_loads) r->module_loads = loads[i].module_loads;
    if (loads[i].library_loads > r->library_loads) r->library_loads = loads[i].library_loads;
  }
  /* A loads record stating 0 and 0 would read as the default later (and
   * could not be served at all): keep the image as a module image. */
  for (size_t i = 0; stated && i < s->n; i++)
    if (stated[i] && !s->recs[i].module_loads && !s->recs[i].library_loads) s->recs[i].module_loads = 1;
  free(stated);
  s->n = prime_fold_dups(s->recs, s->offs, s->n);
  if (s->n == (size_t)-1) return -1;
  s->by_hash = sorted_index(s->recs, s->n);
  return s->by_hash ? 0 : -1;
}

/* A mapped file's pages, once walked, are given back to the page cache: a
 * process keeps resident only what it later touches (the images it
 * preloads), not the whole file. */
static void drop_walked(void *vctx, uint64_t done, uint64_t total) {
  (void)total;
  cg_prime_set *s = vctx;
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), upto = done / page * page;
  /* Behind the walk; or, while a record's image is hashed a second time
   * from its start, behind that pass (the slices just read). */
  uint64_t from = upto > s->dropped_to ? s->dropped_to : (upto > 2 * HASH_SLICE ? upto - 2 * HASH_SLICE : 0);
  if (upto > from) madvise(s->buf + from, upto - from, MADV_DONTNEED);
  if (upto > s->dropped_to) s->dropped_to = upto;
}

int prime_parse_owned(uint8_t *buf, size_t len, bool mapped, const char *path, bool quiet,
                      cg_prime_set **out, cg_prime_warn_fn warn, void *ctx) {
  *out = NULL;
  cg_prime_set *s = calloc(1, sizeof *s);
  if (!s) {
    if (mapped) munmap(buf, len);
    else free(buf);
    prime_warnf(warn, ctx, path, "out of memory reading it; nothing loaded");
    return -1;
  }
  s->buf = buf;
  s->len = len;
  s->mapped = mapped;
  unsigned version;
  prime_hdr_state h = prime_check_header(buf, len, &version);
  if (h != PRIME_HDR_OK) {
    if (h != PRIME_HDR_EMPTY && h != PRIME_HDR_TORN) { /* callers refuse these first */
      cg_prime_free(s);
      return -1;
    }
    /* Empty or a torn header: nothing recorded yet. */
    if (h == PRIME_HDR_TORN && !quiet)
      prime_warnf(warn, ctx, path,
                  "header incomplete (%zu bytes; an interrupted first write?), no records; the "
                  "next write starts the file afresh", len);
    s->tail_off = 0;
    s->n_bad = h == PRIME_HDR_TORN;
    *out = s;
    return 0;
  }
  collector c = {.set = s, .path = path, .quiet = quiet, .warn = warn, .ctx = ctx};
  s->tail_off = prime_walk(buf, len, 0, collect, &c, mapped ? drop_walked : NULL, s);
  if (mapped) drop_walked(s, len, len);
  s->n_hit_recs = c.n_hits;
  s->n_loads_recs = c.n_loads;
  int rc = c.oom ? -1 : index_and_fold(s, c.hits, c.n_hits, c.loads, c.n_loads);
  free(c.hits);
  free(c.loads);
  if (rc) {
    prime_warnf(warn, ctx, path, "out of memory reading it; nothing loaded");
    cg_prime_free(s);
    return -1;
  }
  *out = s;
  return 0;
}

/* ---- the public read-only side of a set ---- */

size_t cg_prime_count(const cg_prime_set *s) { return s ? s->n : 0; }

unsigned cg_prime_format_version(void) { return PRIME_VERSION; }

const cg_prime_identity *cg_prime_identity_of(const cg_prime_set *s) {
  return s && s->has_identity ? &s->identity : NULL;
}

/* The last path component of word. */
static const char *base_name(const char *word) {
  const char *slash = strrchr(word, '/');
  return slash ? slash + 1 : word;
}

void cg_prime_program_name(const char *cmdline, size_t len, char *out, size_t cap) {
  if (!cap) return;
  out[0] = 0;
  if (!cmdline || !len || !cmdline[0] || memchr(cmdline, 0, len) == NULL) return;
  const char *end = cmdline + len, *name = base_name(cmdline);
  /* An interpreter names no program: the script or module it runs does.
   * Code given with -c (multiprocessing's spawned workers) names none. */
  if (!strncmp(name, "python", 6)) {
    const char *w = cmdline + strlen(cmdline) + 1;
    for (; w < end && memchr(w, 0, (size_t)(end - w)); w += strlen(w) + 1) {
      if (!strcmp(w, "-c")) return;
      if (!strcmp(w, "-W") || !strcmp(w, "-X")) { /* options that take the next word */
        w += strlen(w) + 1;
        if (w >= end || !memchr(w, 0, (size_t)(end - w))) break;
        continue;
      }
      if (!strcmp(w, "-m")) {
        const char *mod = w + 3;
        if (mod < end && memchr(mod, 0, (size_t)(end - mod))) name = mod;
        break;
      }
      if (w[0] != '-') {
        name = base_name(w);
        break;
      }
    }
  }
  snprintf(out, cap, "%s", name);
}

const cg_prime_record *cg_prime_get(const cg_prime_set *s, size_t i) {
  return s && i < s->n ? &s->recs[i] : NULL;
}

bool cg_prime_same_entry(const cg_prime_record *r, const void *bytes, uint64_t size, const uint8_t *options,
                         uint32_t n_options) {
  return r->bytes && r->size == size && r->n_options == n_options &&
         (!n_options || memcmp(r->options, options, (size_t)n_options * CG_LOAD_OPT_BYTES) == 0) &&
         memcmp(r->bytes, bytes, size) == 0;
}

/* The first record of (h, size) in the index whose bytes equal bytes and,
 * when any_options is false, whose options equal these. */
static const cg_prime_record *find(const cg_prime_set *s, cg_hash128 h, const void *bytes, size_t size,
                                   const uint8_t *options, uint32_t n_options, bool any_options) {
  if (!s || !bytes || size == 0) return NULL;
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const cg_prime_record *r = &s->recs[s->by_hash[mid]];
    if (cmp_hash(r->hash, r->size, h, size) < 0) lo = mid + 1;
    else hi = mid;
  }
  /* Equal hashes are not proof: the bytes decide. */
  for (; lo < s->n; lo++) {
    const cg_prime_record *r = &s->recs[s->by_hash[lo]];
    if (cmp_hash(r->hash, r->size, h, size)) break;
    /* bytes NULL: not kept (cg_prime_keep_only) */
    if (any_options ? r->bytes && memcmp(r->bytes, bytes, size) == 0
                    : cg_prime_same_entry(r, bytes, size, options, n_options))
      return r;
  }
  return NULL;
}

const cg_prime_record *cg_prime_find_hashed(const cg_prime_set *s, cg_hash128 h, const void *bytes, size_t size,
                                            const uint8_t *options, uint32_t n_options) {
  return find(s, h, bytes, size, options, n_options, false);
}

const cg_prime_record *cg_prime_find_bytes(const cg_prime_set *s, cg_hash128 h, const void *bytes, size_t size) {
  return find(s, h, bytes, size, NULL, 0, true);
}

void cg_prime_free(cg_prime_set *s) {
  if (!s) return;
  if (s->mapped) munmap(s->buf, s->len);
  else free(s->buf);
  free(s->recs);
  free(s->offs);
  free(s->by_hash);
  free(s);
}

uint64_t cg_prime_record_disk_size(const cg_prime_record *r) {
  return prime_image_len(r) + (prime_needs_loads_record(r) ? PRIME_LOADS_LEN : 0);
}

int cg_prime_parse_size(const char *s, uint64_t *out) {
  if (!s || *s < '0' || *s > '9') return -1;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  unsigned shift = 0;
  switch (*s) {
  case '\0': break;
  case 'k': case 'K': shift = 10; break;
  case 'm': case 'M': shift = 20; break;
  case 'g': case 'G': shift = 30; break;
  default: return -1;
  }
  if (shift && *++s) return -1; /* one suffix letter and nothing after it */
  if (shift && v > (UINT64_MAX >> shift)) return -1;
  *out = v << shift;
  return 0;
}
