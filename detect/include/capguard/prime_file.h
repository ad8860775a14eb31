/* The priming file: module images that were needed during capture, kept so
 * that the next run can load them before capture begins. The on-disk format is
 * specified in docs/priming-format.md. Safe against concurrent appenders
 * (several processes), torn writes, corruption and foreign owners. */
#ifndef CAPGUARD_PRIME_FILE_H
#define CAPGUARD_PRIME_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capguard/image.h"

#define CG_PRIME_DEFAULT_MAX_BYTES ((uint64_t)256 << 20)

/* One line of text per problem ("capguard: priming file X: record 3 damaged (checksum), skipped"). */
typedef void (*cg_prime_warn_fn)(void *ctx, const char *line);

typedef struct {
  cg_image_kind kind;
  uint32_t sm_arch;
  cg_hash128 hash;        /* XXH3-128 of bytes */
  uint64_t size;          /* bytes in the image */
  const uint8_t *bytes;   /* the exact image */
  uint32_t n_kernels;
  uint32_t names_len;     /* bytes in kernel_names, NULs included */
  const char *kernel_names; /* n_kernels NUL-terminated names back to back */
  uint64_t hits;          /* how often it was needed during capture */
  uint64_t first_ns, last_ns; /* CLOCK_REALTIME when first and last needed */
  /* The most copies of these bytes one process had alive at once, loaded during capture, as a
   * module (cuModuleLoad*) and as a library (cuLibraryLoad*): the next run
   * preloads that many of each. 0 and 0 in a record handed to append means
   * the default of a version-1 file without loads records: 1 module, 0
   * libraries. */
  uint32_t module_loads, library_loads;
  /* The options the loads were made with, canonical (capguard/load_options.h):
   * n_options * CG_LOAD_OPT_BYTES bytes; 0 and NULL for loads without options.
   * Part of the entry's key: the same bytes loaded with other options are
   * another entry, preloaded with its own options. */
  uint32_t n_options;
  const uint8_t *options;
} cg_prime_record;

typedef struct cg_prime_set cg_prime_set;

/* What a file is for (the identity record, type 5): written by `capguard
 * prime learn` and kept by every rewrite, so that a file carried to another
 * machine says what it can serve there. Strings are NUL-terminated, "" when
 * not said. */
#define CG_PRIME_PROGRAM_MAX 256 /* bytes, the NUL included */
#define CG_PRIME_LABEL_MAX 1024
typedef struct {
  unsigned format_version; /* the newest file format the writing capguard knows */
  unsigned driver_version; /* the driver it was learned on (13000 for 13.0); 0 when unknown */
  unsigned device_sm;      /* the GPU it was learned on (90); 0 when unknown */
  uint64_t written_ns;     /* CLOCK_REALTIME when written */
  char program[CG_PRIME_PROGRAM_MAX]; /* cg_prime_program_name of what it was learned from */
  char label[CG_PRIME_LABEL_MAX];     /* the user's, e.g. "model=llama,tp=2" */
} cg_prime_identity;

/* The newest file format this capguard reads and writes. */
unsigned cg_prime_format_version(void);
/* The set's identity (the last identity record of the file), or NULL. */
const cg_prime_identity *cg_prime_identity_of(const cg_prime_set *s);
/* Replace path atomically (as cg_prime_rewrite) with the same records and
 * this identity. Returns 0 or -1 (warned). */
int cg_prime_set_identity(const char *path, const cg_prime_identity *id, cg_prime_warn_fn warn, void *ctx);
/* A program's name as an identity holds it, from its command line (argv
 * words NUL-separated, len bytes): the file name of argv[0]; for a Python
 * interpreter, the script's file name or the module of -m. "" when none. */
void cg_prime_program_name(const char *cmdline, size_t len, char *out, size_t cap);

/* Read every intact record of path into *out (an empty set when the file does
 * not exist). Damaged or torn records are skipped with one warning each.
 * Returns 0, or -1 when the whole file is refused (owned by another user,
 * writable by others, a symlink, a newer format version, not a priming file);
 * then *out is NULL and warn got one line saying why and what to do. */
int cg_prime_load(const char *path, cg_prime_set **out, cg_prime_warn_fn warn, void *ctx);
/* The same, read into this process's memory (pread, under the shared lock)
 * instead of mapped: a set the shim keeps for the process's life, which an
 * in-place rewrite of the file (truncate, cp over it) must not take away
 * (a mapping would fault with SIGBUS at the next touch). prime_in_memory.c. */
int cg_prime_load_copy(const char *path, cg_prime_set **out, cg_prime_warn_fn warn, void *ctx);
/* Keeps the bytes of the records keep() says yes to, in one block of the
 * set's own, and every record's kernel names; the other records' bytes
 * become NULL (never found, never loaded). The file's pages or copy are
 * given back. 0, or -1 out of memory (the set unchanged). */
int cg_prime_keep_only(cg_prime_set *s, bool (*keep)(const cg_prime_record *r, void *ctx), void *ctx);
size_t cg_prime_count(const cg_prime_set *s);
const cg_prime_record *cg_prime_get(const cg_prime_set *s, size_t i);
/* The record of exactly these bytes loaded with exactly these options
 * (n_options canonical entries at options; 0, NULL: none), whose XXH3-128
 * the caller already has (an inspected image), or NULL: the hash only
 * narrows the search, the bytes still decide, so a wrong hash can miss but
 * never match wrongly. */
const cg_prime_record *cg_prime_find_hashed(const cg_prime_set *s, cg_hash128 hash, const void *bytes,
                                            size_t size, const uint8_t *options, uint32_t n_options);
/* The first record of these bytes whatever its options, or NULL: what a load
 * whose options match no record is told it differs from. */
const cg_prime_record *cg_prime_find_bytes(const cg_prime_set *s, cg_hash128 hash, const void *bytes,
                                           size_t size);
/* Whether r is the entry of these bytes and options. */
bool cg_prime_same_entry(const cg_prime_record *r, const void *bytes, uint64_t size, const uint8_t *options,
                         uint32_t n_options);
void cg_prime_free(cg_prime_set *s);

/* Add r to path, creating it (mode 0600, never through a symlink) if needed,
 * under an exclusive lock so concurrent writers lose nothing. An image
 * already in the file is not stored again: its hit count and last time are
 * updated instead. Refuses (returns -1 with a warning) rather than grow the
 * file past max_bytes. Returns 0 on success. */
int cg_prime_append(const char *path, const cg_prime_record *r, uint64_t max_bytes,
                    cg_prime_warn_fn warn, void *ctx);

/* The same, for a process that records more than once: the appender keeps
 * an index of the file and walks only what was added since its last append,
 * so an append costs the record, not the file. seed (may be NULL) is a set
 * loaded from path, which saves the first walk. */
typedef struct cg_prime_appender cg_prime_appender;
cg_prime_appender *cg_prime_appender_new(const char *path, uint64_t max_bytes, const cg_prime_set *seed,
                                         cg_prime_warn_fn warn, void *ctx);
int cg_prime_appender_add(cg_prime_appender *a, const cg_prime_record *r);
/* The same without a hit for an image the file has: only a loads record,
 * when r needs more copies alive at once than the file states (nothing is
 * written otherwise). For a process that recorded the image already and
 * has since needed more copies of it. */
int cg_prime_appender_raise_loads(cg_prime_appender *a, const cg_prime_record *r);
/* With on, an append whose lock another process holds returns 1 at once
 * (nothing written, nothing said) instead of waiting: for work that can as
 * well be done at a later moment. */
void cg_prime_appender_nowait(cg_prime_appender *a, bool on);
void cg_prime_appender_free(cg_prime_appender *a);

/* The priming file's path: prime ($CAPGUARD_PRIME), else
 * xdg_cache_home/capguard/prime.cgp (only when absolute, as the XDG spec
 * says), else home/.cache/capguard/prime.cgp. Each may be NULL. The caller
 * reads the environment (the shim in config.c, the CLI with getenv): detect/
 * reads none. Returns 0, -1 if no home is known or buf is too small. */
int cg_prime_default_path(const char *prime, const char *xdg_cache_home, const char *home,
                          char *buf, size_t cap);

/* ---- Added for the CLI, the fuzzer and the shim's size cap. ---- */

#define CG_PRIME_HEADER_BYTES 32u     /* file header; records follow */
#define CG_PRIME_REC_IMAGE 1u         /* record types (docs/priming-format.md) */
#define CG_PRIME_REC_HIT 2u
#define CG_PRIME_REC_LOADS 3u
#define CG_PRIME_REC_IMAGE_OPTIONS 4u /* an image record with its load options (version 2) */
#define CG_PRIME_REC_IDENTITY 5u      /* what the file is for (cg_prime_identity) */

/* Parse a priming file already in memory (the same code cg_prime_load uses;
 * the fuzzer calls it). name is only used in warnings. The set owns a copy. */
int cg_prime_parse_memory(const void *data, size_t len, const char *name, cg_prime_set **out,
                          cg_prime_warn_fn warn, void *ctx);

/* "4096", "64K", "256M", "2G" (binary units, either case) -> bytes.
 * Returns 0, or -1 for anything else (empty, sign, spaces, junk, overflow). */
int cg_prime_parse_size(const char *s, uint64_t *out);

/* Write a new file at path holding the records of path (if any) plus recs,
 * folded by bytes (hits summed, loads maximised): the batch form of append,
 * for tools and benchmarks. Atomic as cg_prime_rewrite. Returns 0 or -1. */
int cg_prime_add_records(const char *path, const cg_prime_record *recs, size_t n,
                         cg_prime_warn_fn warn, void *ctx);

/* Bytes the record takes in a file written by cg_prime_rewrite (hits folded,
 * loads record included when it has one). */
uint64_t cg_prime_record_disk_size(const cg_prime_record *r);

typedef enum {
  CG_PRIME_REC_OK = 0,
  CG_PRIME_REC_DAMAGED = 1, /* bad bytes with an intact record after them */
  CG_PRIME_REC_TORN = 2,    /* bad bytes up to the end of the file (an interrupted write) */
} cg_prime_rec_state;

typedef struct {
  uint64_t offset, length;  /* byte range in the file */
  cg_prime_rec_state state;
  unsigned type;            /* CG_PRIME_REC_*, or an unknown type; 0 when not OK */
  const char *why;          /* static text when not OK */
} cg_prime_walk_entry;

typedef void (*cg_prime_walk_fn)(void *ctx, const cg_prime_walk_entry *e);
typedef void (*cg_prime_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Check every record of path: each (may be NULL) gets one entry per record or
 * damaged range in file order, progress (may be NULL) is called every few MiB.
 * Returns 0 when all is intact, 1 when damage was found, -1 when the file is
 * refused or missing (warn got one line). Never modifies the file. */
int cg_prime_verify(const char *path, cg_prime_walk_fn each, cg_prime_progress_fn progress,
                    void *ctx, cg_prime_warn_fn warn, void *wctx);

/* Under the exclusive lock, with cur the file's current contents: set keep[i]
 * to false for records to drop (all start true). Return 0 to go on, -1 to
 * abort (nothing is written). */
typedef int (*cg_prime_select_fn)(void *ctx, const cg_prime_set *cur, bool *keep);

/* Replace path atomically (temp file in the same directory, fsync, rename,
 * all under the lock) with the records select keeps plus every record of the
 * sets in add[0..n_add), deduplicated by bytes with hits summed, hit records
 * folded, damaged records dropped. Creates path when missing. select may be
 * NULL (keep all). Returns 0, -1 on refusal/error (warned), or select's -1. */
int cg_prime_rewrite(const char *path, cg_prime_select_fn select, void *sctx,
                     const cg_prime_set *const *add, size_t n_add,
                     cg_prime_warn_fn warn, void *wctx);

#endif
