/* Internal to detect/: the priming file's byte format (docs/priming-format.md),
 * with no file I/O. prime_file.c adds paths, locking and safety on top. */
#ifndef CAPGUARD_PRIME_FORMAT_H
#define CAPGUARD_PRIME_FORMAT_H

#include "capguard/prime_file.h"

/* Version 2 added image records with load options (type 4); a file holding
 * none is still written as version 1, which every capguard reads. */
#define PRIME_VERSION 2u
#define PRIME_VERSION_PLAIN 1u
#define PRIME_REC_MAGIC 0x52504743u /* "CGPR" as little-endian bytes */
#define PRIME_REC_HEAD 16u          /* magic, type, reserved, length */
#define PRIME_IMAGE_FIXED 80u       /* record head + image fields; bytes start here */
#define PRIME_IMAGE_OPTIONS_FIXED 88u /* the same + options count and a reserved word (type 4) */
#define PRIME_HIT_LEN 64u
#define PRIME_LOADS_LEN 64u
#define PRIME_MIN_REC 24u           /* head + checksum */
#define PRIME_MAX_NAMES (64u << 10) /* bound on kernel-name bytes per record */
#define PRIME_IDENTITY_FIXED 48u    /* record head + identity fields; strings start here */

extern const uint8_t prime_magic[8];

typedef enum {
  PRIME_HDR_OK,
  PRIME_HDR_EMPTY,   /* zero bytes: created, header not yet written */
  PRIME_HDR_TORN,    /* a prefix of a valid header: interrupted first write */
  PRIME_HDR_FOREIGN, /* not a priming file */
  PRIME_HDR_NEWER,   /* a version this code does not read */
  PRIME_HDR_DAMAGED,
} prime_hdr_state;

/* Classify the first bytes of a file; *version gets the version field when present. */
prime_hdr_state prime_check_header(const uint8_t *buf, size_t len, unsigned *version);
void prime_encode_header(uint8_t out[CG_PRIME_HEADER_BYTES], uint64_t created_ns, unsigned version);
/* The version a file holding records like r needs: 2 when r has options. */
unsigned prime_version_for(const cg_prime_record *r);

/* Bytes of r's image record: type 1, or type 4 when r has options. */
uint64_t prime_image_len(const cg_prime_record *r);
void prime_encode_image(uint8_t *out, const cg_prime_record *r); /* prime_image_len bytes */
/* Where an image record's bytes start, and its options (type 4) */
uint64_t prime_bytes_at(unsigned type);
uint64_t prime_options_at(unsigned type, uint64_t size, uint64_t names_len);
bool prime_is_image_type(unsigned type);
void prime_encode_hit(uint8_t out[PRIME_HIT_LEN], uint64_t image_off, cg_hash128 h,
                      uint64_t hits, uint64_t last_ns);
/* Loads record (type 3): how many loads of the image one process needed. */
void prime_encode_loads(uint8_t out[PRIME_LOADS_LEN], uint64_t image_off, cg_hash128 h,
                        uint32_t module_loads, uint32_t library_loads, uint64_t last_ns);
/* r's loads as a file states them: 0 and 0 is the version-1 default (1, 0). */
void prime_effective_loads(const cg_prime_record *r, uint32_t *module_loads, uint32_t *library_loads);
/* True when r needs a loads record (its loads differ from the default). */
bool prime_needs_loads_record(const cg_prime_record *r);

/* Bytes of the identity record of id, and the record itself. */
uint64_t prime_identity_len(const cg_prime_identity *id);
void prime_encode_identity(uint8_t *out, const cg_prime_identity *id);

/* Walk the records from offset start (at least the header's end), calling
 * each for every record or damaged range. Never reads outside buf[0, len);
 * linear in len - start however the bytes are damaged. Returns the offset
 * where a torn tail starts (len when there is none). */
typedef void (*prime_walk_cb)(void *ctx, const cg_prime_walk_entry *e, const uint8_t *rec);
uint64_t prime_walk(const uint8_t *buf, size_t len, uint64_t start, prime_walk_cb each, void *ctx,
                    cg_prime_progress_fn progress, void *pctx);

struct cg_prime_set {
  uint8_t *buf; /* the file's bytes (mapped, or a copy); records point into it;
                 * after cg_prime_keep_only, only the bytes kept */
  size_t len;   /* the file's length */
  bool mapped;        /* buf is a read-only shared mapping of the file */
  uint64_t dropped_to; /* mapped pages before this were handed back after the walk */
  uint64_t dev, ino;  /* the file it was read from (0, 0 for memory) */
  cg_prime_record *recs; /* file order */
  uint64_t *offs;        /* offs[i]: file offset of recs[i]'s image record */
  size_t n;
  size_t *by_hash;   /* indices into recs sorted by (hash, size) */
  uint64_t tail_off; /* where a torn tail starts (len when none) */
  size_t n_bad;      /* damaged ranges, torn tail included */
  size_t n_hit_recs; /* hit records folded in */
  size_t n_loads_recs; /* loads records folded in */
  bool has_identity;   /* an identity record was read: the last one is kept */
  cg_prime_identity identity;
};

/* Fold records with identical bytes into the first of them (hits summed,
 * first/last widened) and compact recs (and offs, when not NULL) keeping
 * order. Returns the new count, or (size_t)-1 when out of memory. */
size_t prime_fold_dups(cg_prime_record *recs, uint64_t *offs, size_t n);

/* Parse buf (taking ownership: unmapped or freed on failure too). Header must
 * already be PRIME_HDR_OK, EMPTY or TORN. Warnings name path; quiet
 * suppresses the ones about damage (append uses it: load already reported
 * them). */
int prime_parse_owned(uint8_t *buf, size_t len, bool mapped, const char *path, bool quiet,
                      cg_prime_set **out, cg_prime_warn_fn warn, void *ctx);

/* Format one warning line "capguard: priming file PATH: ..." and pass it on. */
void prime_warnf(cg_prime_warn_fn warn, void *ctx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
