/* The options a module or library load passes (cuModuleLoadDataEx's JIT
 * options; cuLibraryLoadData's JIT and library options), in a canonical form
 * that is part of a priming entry's key: a load is served only a copy
 * preloaded with exactly the options it asks for.
 *
 * Each option the driver documents has a role (load_options.c):
 *   input   its value changes what the load makes (registers, optimisation
 *           level, target, cache mode, the library's binary-is-preserved
 *           hint...): key and value are compared;
 *   output  the driver writes it (wall time, the log buffers): only its
 *           presence is compared, and a served load gets the preload's;
 *   log size (the two log buffers' sizes) an input (the caller's buffer
 *           size, compared) that the driver replaces by the bytes written;
 *   in-out  CU_JIT_THREADS_PER_BLOCK: an input that the driver replaces by
 *           what it used;
 *   foreign its value points into the caller's memory and changes the result
 *           (symbol tables, referenced names): capguard cannot make the same
 *           load, so such a load is never served or recorded.
 * An option the table does not know is foreign too: never guessed.
 * Numbers are the driver API's (cuda.h); detect/ includes no driver header. */
#ifndef CAPGUARD_LOAD_OPTIONS_H
#define CAPGUARD_LOAD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { CG_OPT_JIT = 0, CG_OPT_LIBRARY = 1 }; /* an option's scope */

/* Options a canonical set holds at most: the driver's whole JIT table is 35. */
#define CG_LOAD_OPTS_MAX 40
/* Bytes one option takes in a priming record (docs/priming-format.md). */
#define CG_LOAD_OPT_BYTES 16u

typedef struct {
  uint8_t scope;  /* CG_OPT_JIT or CG_OPT_LIBRARY */
  uint32_t key;   /* the CUjit_option or CUlibraryOption */
  uint64_t value; /* the input value (32 bits, as the driver reads it); 0 for an output */
} cg_load_opt;

typedef struct {
  uint32_t n;
  cg_load_opt o[CG_LOAD_OPTS_MAX]; /* sorted by (scope, key), no key twice */
} cg_load_opts;

/* A load's options as the caller passed them (values are the void * slots). */
typedef struct {
  unsigned n_jit, n_lib;
  const int *jit_keys, *lib_keys;
  void **jit_vals, **lib_vals; /* the caller's slots: a served load writes its outputs there */
} cg_load_opts_raw;

typedef enum {
  CG_OPTS_SERVABLE = 0,
  CG_OPTS_FOREIGN,   /* an option capguard cannot reproduce (why_scope, why_key name it) */
  CG_OPTS_MALFORMED, /* a key twice, a NULL list, too many: left to the driver */
} cg_opts_verdict;

typedef struct {
  cg_opts_verdict verdict;
  uint8_t why_scope;
  uint32_t why_key;
} cg_opts_check;

/* raw into *out, canonical. Never reads a value slot of a foreign option. */
cg_opts_check cg_load_opts_canon(const cg_load_opts_raw *raw, cg_load_opts *out);

/* "CU_JIT_MAX_REGISTERS", "CU_LIBRARY_BINARY_IS_PRESERVED", or for a key the
 * table does not know "CU_JIT_OPTION_99" / "CU_LIBRARY_OPTION_7" (in buf). */
const char *cg_load_opt_name(uint8_t scope, uint32_t key, char *buf, size_t cap);

bool cg_load_opts_equal(const cg_load_opts *a, const cg_load_opts *b);

/* One phrase saying how asked differs from recorded, the first difference
 * in canonical order: "CU_JIT_MAX_REGISTERS recorded 32, asked 64",
 * "CU_JIT_OPTIMIZATION_LEVEL asked 2, not recorded", "CU_LIBRARY_BINARY_IS_PRESERVED
 * recorded 1, not asked"; "" when equal. */
void cg_load_opts_diff(const cg_load_opts *recorded, const cg_load_opts *asked, char *buf, size_t cap);

/* How many options differ between a and b (a key in one only, or another
 * value): which recorded entry a load is told it differs from. */
unsigned cg_load_opts_distance(const cg_load_opts *a, const cg_load_opts *b);

/* All options as "NAME=VALUE" (outputs as "NAME"), comma-separated, for
 * listings and the log; "" when none. */
void cg_load_opts_format(const cg_load_opts *o, char *buf, size_t cap);

/* The priming record's bytes for o: n * CG_LOAD_OPT_BYTES, little-endian
 * (scope, three zero bytes, key, value). */
void cg_load_opts_encode(const cg_load_opts *o, uint8_t *out);
/* Back from those bytes; -1 when they are not a canonical set (unsorted, a
 * key twice, a scope or padding out of range, too many). */
int cg_load_opts_decode(const uint8_t *in, uint32_t n, cg_load_opts *out);

/* XXH3-64 of o's canonical bytes, 0 when o has none: folded into an
 * image's hash where an entry (bytes and options) needs one key. */
uint64_t cg_load_opts_hash(const cg_load_opts *o);

/* Whether an option's value is an output the driver writes (wall time, a
 * log buffer, a log size, threads per block). */
bool cg_load_opt_written(uint8_t scope, uint32_t key);

#endif
