/* Load options in canonical form: the roles of the driver's JIT and library
 * options (load_options.h), and their key in a priming entry. The numbers
 * and the roles follow cuda.h's CUjit_option and CUlibraryOption. */
#include "capguard/load_options.h"

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

typedef enum { ROLE_FOREIGN = 0, ROLE_INPUT, ROLE_OUTPUT, ROLE_LOG_SIZE, ROLE_IN_OUT } role;

/* The name an array, not a pointer: a table of pointers is relocated at
 * every start-up of every process the shim is in. Longer than the longest. */
typedef struct {
  char name[56];
  role r;
} opt_row;

/* Indexed by CUjit_option. A value typed unsigned int, int or an enum is
 * read from the slot's low 32 bits, as the driver reads it. */
static const opt_row jit_rows[] = {
    [0] = {"CU_JIT_MAX_REGISTERS", ROLE_INPUT},
    [1] = {"CU_JIT_THREADS_PER_BLOCK", ROLE_IN_OUT},
    [2] = {"CU_JIT_WALL_TIME", ROLE_OUTPUT},
    [3] = {"CU_JIT_INFO_LOG_BUFFER", ROLE_OUTPUT},
    [4] = {"CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES", ROLE_LOG_SIZE},
    [5] = {"CU_JIT_ERROR_LOG_BUFFER", ROLE_OUTPUT},
    [6] = {"CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES", ROLE_LOG_SIZE},
    [7] = {"CU_JIT_OPTIMIZATION_LEVEL", ROLE_INPUT},
    [8] = {"CU_JIT_TARGET_FROM_CUCONTEXT", ROLE_OUTPUT}, /* no value: its presence is the input */
    [9] = {"CU_JIT_TARGET", ROLE_INPUT},
    [10] = {"CU_JIT_FALLBACK_STRATEGY", ROLE_INPUT},
    [11] = {"CU_JIT_GENERATE_DEBUG_INFO", ROLE_INPUT},
    [12] = {"CU_JIT_LOG_VERBOSE", ROLE_INPUT},
    [13] = {"CU_JIT_GENERATE_LINE_INFO", ROLE_INPUT},
    [14] = {"CU_JIT_CACHE_MODE", ROLE_INPUT},
    [15] = {"CU_JIT_NEW_SM3X_OPT", ROLE_INPUT},
    [16] = {"CU_JIT_FAST_COMPILE", ROLE_INPUT},
    /* Tables in the caller's memory that the result depends on. */
    [17] = {"CU_JIT_GLOBAL_SYMBOL_NAMES", ROLE_FOREIGN},
    [18] = {"CU_JIT_GLOBAL_SYMBOL_ADDRESSES", ROLE_FOREIGN},
    [19] = {"CU_JIT_GLOBAL_SYMBOL_COUNT", ROLE_FOREIGN},
    [20] = {"CU_JIT_LTO", ROLE_INPUT},
    [21] = {"CU_JIT_FTZ", ROLE_INPUT},
    [22] = {"CU_JIT_PREC_DIV", ROLE_INPUT},
    [23] = {"CU_JIT_PREC_SQRT", ROLE_INPUT},
    [24] = {"CU_JIT_FMA", ROLE_INPUT},
    [25] = {"CU_JIT_REFERENCED_KERNEL_NAMES", ROLE_FOREIGN},
    [26] = {"CU_JIT_REFERENCED_KERNEL_COUNT", ROLE_FOREIGN},
    [27] = {"CU_JIT_REFERENCED_VARIABLE_NAMES", ROLE_FOREIGN},
    [28] = {"CU_JIT_REFERENCED_VARIABLE_COUNT", ROLE_FOREIGN},
    [29] = {"CU_JIT_OPTIMIZE_UNUSED_DEVICE_VARIABLES", ROLE_INPUT},
    [30] = {"CU_JIT_POSITION_INDEPENDENT_CODE", ROLE_INPUT},
    [31] = {"CU_JIT_MIN_CTA_PER_SM", ROLE_INPUT},
    [32] = {"CU_JIT_MAX_THREADS_PER_BLOCK", ROLE_INPUT},
    [33] = {"CU_JIT_OVERRIDE_DIRECTIVE_VALUES", ROLE_INPUT},
    [34] = {"CU_JIT_SPLIT_COMPILE", ROLE_INPUT},
};

/* Indexed by CUlibraryOption. The host table is the caller's memory;
 * binary-is-preserved only says the caller keeps the image's bytes alive,
 * which a preload honours with bytes capguard keeps for the process's life. */
static const opt_row lib_rows[] = {
    [0] = {"CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE", ROLE_FOREIGN},
    [1] = {"CU_LIBRARY_BINARY_IS_PRESERVED", ROLE_INPUT},
};

#define N_ROWS(a) (sizeof(a) / sizeof(a)[0])

static const opt_row *row_of(uint8_t scope, uint32_t key) {
  if (scope == CG_OPT_JIT && key < N_ROWS(jit_rows) && jit_rows[key].name[0]) return &jit_rows[key];
  if (scope == CG_OPT_LIBRARY && key < N_ROWS(lib_rows) && lib_rows[key].name[0]) return &lib_rows[key];
  return NULL;
}

const char *cg_load_opt_name(uint8_t scope, uint32_t key, char *buf, size_t cap) {
  const opt_row *r = row_of(scope, key);
  if (r) return r->name;
  snprintf(buf, cap, "%s%u", scope == CG_OPT_JIT ? "CU_JIT_OPTION_" : "CU_LIBRARY_OPTION_", key);
  return buf;
}

bool cg_load_opt_written(uint8_t scope, uint32_t key) {
  const opt_row *r = row_of(scope, key);
  return r && (r->r == ROLE_LOG_SIZE || r->r == ROLE_IN_OUT || (r->r == ROLE_OUTPUT && key != 8));
}

static int cmp_opt(const void *a, const void *b) {
  const cg_load_opt *x = a, *y = b;
  if (x->scope != y->scope) return x->scope < y->scope ? -1 : 1;
  return (x->key > y->key) - (x->key < y->key);
}

/* One scope's options added to out; a foreign or unknown key stops it. */
static cg_opts_check add_scope(uint8_t scope, unsigned n, const int *keys, void **vals, cg_load_opts *out) {
  cg_opts_check c = {CG_OPTS_SERVABLE, 0, 0};
  if (n && (!keys || !vals)) return (cg_opts_check){CG_OPTS_MALFORMED, scope, 0};
  for (unsigned i = 0; i < n; i++) {
    uint32_t key = (uint32_t)keys[i];
    const opt_row *r = row_of(scope, key);
    if (!r || r->r == ROLE_FOREIGN) return (cg_opts_check){CG_OPTS_FOREIGN, scope, key};
    if (out->n == CG_LOAD_OPTS_MAX) return (cg_opts_check){CG_OPTS_MALFORMED, scope, key};
    uint64_t v = r->r == ROLE_OUTPUT ? 0 : (uint32_t)(uintptr_t)vals[i];
    out->o[out->n++] = (cg_load_opt){scope, key, v};
  }
  return c;
}

cg_opts_check cg_load_opts_canon(const cg_load_opts_raw *raw, cg_load_opts *out) {
  out->n = 0;
  cg_opts_check c = add_scope(CG_OPT_JIT, raw->n_jit, raw->jit_keys, raw->jit_vals, out);
  if (c.verdict == CG_OPTS_SERVABLE)
    c = add_scope(CG_OPT_LIBRARY, raw->n_lib, raw->lib_keys, raw->lib_vals, out);
  if (c.verdict != CG_OPTS_SERVABLE) {
    out->n = 0;
    return c;
  }
  /* Insertion sort: a few options, and the shim calls no qsort. */
  for (uint32_t i = 1; i < out->n; i++)
    for (uint32_t k = i; k > 0 && cmp_opt(&out->o[k - 1], &out->o[k]) > 0; k--) {
      cg_load_opt t = out->o[k];
      out->o[k] = out->o[k - 1];
      out->o[k - 1] = t;
    }
  /* A key given twice: which one the driver takes is not documented. */
  for (uint32_t i = 1; i < out->n; i++)
    if (!cmp_opt(&out->o[i - 1], &out->o[i])) {
      c = (cg_opts_check){CG_OPTS_MALFORMED, out->o[i].scope, out->o[i].key};
      out->n = 0;
      return c;
    }
  return c;
}

bool cg_load_opts_equal(const cg_load_opts *a, const cg_load_opts *b) {
  if (a->n != b->n) return false;
  for (uint32_t i = 0; i < a->n; i++)
    if (a->o[i].scope != b->o[i].scope || a->o[i].key != b->o[i].key || a->o[i].value != b->o[i].value)
      return false;
  return true;
}

void cg_load_opts_diff(const cg_load_opts *recorded, const cg_load_opts *asked, char *buf, size_t cap) {
  char tmp[32];
  uint32_t i = 0, j = 0;
  buf[0] = 0;
  while (i < recorded->n || j < asked->n) {
    const cg_load_opt *r = i < recorded->n ? &recorded->o[i] : NULL, *a = j < asked->n ? &asked->o[j] : NULL;
    int c = !r ? 1 : !a ? -1 : cmp_opt(r, a);
    if (c < 0) {
      snprintf(buf, cap, "%s recorded %llu, not asked", cg_load_opt_name(r->scope, r->key, tmp, sizeof tmp),
               (unsigned long long)r->value);
      return;
    }
    if (c > 0) {
      snprintf(buf, cap, "%s asked %llu, not recorded", cg_load_opt_name(a->scope, a->key, tmp, sizeof tmp),
               (unsigned long long)a->value);
      return;
    }
    if (r->value != a->value) {
      snprintf(buf, cap, "%s recorded %llu, asked %llu", cg_load_opt_name(r->scope, r->key, tmp, sizeof tmp),
               (unsigned long long)r->value, (unsigned long long)a->value);
      return;
    }
    i++, j++;
  }
}

unsigned cg_load_opts_distance(const cg_load_opts *a, const cg_load_opts *b) {
  unsigned d = 0;
  uint32_t i = 0, j = 0;
  while (i < a->n || j < b->n) {
    int c = i == a->n ? 1 : j == b->n ? -1 : cmp_opt(&a->o[i], &b->o[j]);
    d += c != 0 || a->o[i].value != b->o[j].value;
    i += c <= 0;
    j += c >= 0;
  }
  return d;
}

void cg_load_opts_format(const cg_load_opts *o, char *buf, size_t cap) {
  char tmp[32];
  size_t at = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < o->n && at < cap; i++) {
    const opt_row *r = row_of(o->o[i].scope, o->o[i].key);
    const char *name = cg_load_opt_name(o->o[i].scope, o->o[i].key, tmp, sizeof tmp);
    int w = r && r->r == ROLE_OUTPUT
                ? snprintf(buf + at, cap - at, "%s%s", i ? "," : "", name)
                : snprintf(buf + at, cap - at, "%s%s=%llu", i ? "," : "", name, (unsigned long long)o->o[i].value);
    if (w < 0) break;
    at += (size_t)w;
  }
}

void cg_load_opts_encode(const cg_load_opts *o, uint8_t *out) {
  for (uint32_t i = 0; i < o->n; i++) {
    uint8_t *p = out + (size_t)i * CG_LOAD_OPT_BYTES;
    uint32_t key = htole32(o->o[i].key);
    uint64_t value = htole64(o->o[i].value);
    memset(p, 0, 4);
    p[0] = o->o[i].scope;
    memcpy(p + 4, &key, 4);
    memcpy(p + 8, &value, 8);
  }
}

int cg_load_opts_decode(const uint8_t *in, uint32_t n, cg_load_opts *out) {
  out->n = 0;
  if (n > CG_LOAD_OPTS_MAX) return -1;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *p = in + (size_t)i * CG_LOAD_OPT_BYTES;
    uint32_t key;
    uint64_t value;
    memcpy(&key, p + 4, 4);
    memcpy(&value, p + 8, 8);
    cg_load_opt o = {p[0], le32toh(key), le64toh(value)};
    if (o.scope > CG_OPT_LIBRARY || p[1] || p[2] || p[3]) return -1;
    if (i && cmp_opt(&out->o[i - 1], &o) >= 0) return -1;
    out->o[out->n++] = o;
  }
  return 0;
}

uint64_t cg_load_opts_hash(const cg_load_opts *o) {
  if (!o || !o->n) return 0;
  uint8_t b[CG_LOAD_OPTS_MAX * CG_LOAD_OPT_BYTES];
  cg_load_opts_encode(o, b);
  uint64_t h = XXH3_64bits(b, (size_t)o->n * CG_LOAD_OPT_BYTES);
  return h ? h : 1;
}
