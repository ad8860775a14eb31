/* Preloads made with the recorded options, and their outputs handed on
 * (preload_load.h). The option numbers are the driver API's CUjit_option. */
#include "preload_load.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "entry_points.h"
#include "warn.h"

struct cg_load_outputs {
  uint32_t wall_bits;        /* CU_JIT_WALL_TIME: the float's bytes, as the driver stored them */
  uintptr_t threads;         /* CU_JIT_THREADS_PER_BLOCK after the load */
  uintptr_t info_written, error_written; /* the size slots after the load */
  char *info, *error;        /* the logs as written (NUL-ended), NULL when not asked */
  bool wall, has_threads, has_info_size, has_error_size;
};

/* A log buffer this large is not believed: a preload will not allocate it. */
#define LOG_CAP_MAX ((uint64_t)16 << 20)

typedef struct {
  int jit_keys[CG_LOAD_OPTS_MAX], lib_keys[CG_LOAD_OPTS_MAX];
  void *jit_vals[CG_LOAD_OPTS_MAX], *lib_vals[CG_LOAD_OPTS_MAX];
  unsigned n_jit, n_lib;
  int info_at, error_at; /* the log buffers' slots, -1 when not asked */
  char *info, *error;
  uint64_t info_cap, error_cap;
} load_call;

static uint64_t value_of(const cg_load_opts *o, uint32_t key) {
  for (uint32_t i = 0; i < o->n; i++)
    if (o->o[i].scope == CG_OPT_JIT && o->o[i].key == key)
      return o->o[i].value;
  return 0;
}

/* The call's arrays from the record's options; log buffers of the caller's
 * sizes. -1 when the record cannot be loaded as asked. */
static int build(const cg_load_opts *o, bool library, load_call *c) {
  memset(c, 0, sizeof *c);
  c->info_at = c->error_at = -1;
  for (uint32_t i = 0; i < o->n; i++) {
    const cg_load_opt *x = &o->o[i];
    if (x->scope == CG_OPT_LIBRARY) {
      if (!library)
        return -1; /* a module load never passes library options */
      c->lib_keys[c->n_lib] = (int)x->key;
      c->lib_vals[c->n_lib++] = (void *)(uintptr_t)x->value;
      continue;
    }
    unsigned at = c->n_jit++;
    c->jit_keys[at] = (int)x->key;
    c->jit_vals[at] = (void *)(uintptr_t)x->value;
    if (x->key == CU_JIT_INFO_LOG_BUFFER || x->key == CU_JIT_ERROR_LOG_BUFFER) {
      bool info = x->key == CU_JIT_INFO_LOG_BUFFER;
      uint64_t cap = value_of(o, info ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES : CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
      if (cap > LOG_CAP_MAX)
        return -1;
      char *buf = calloc(1, cap ? cap : 1);
      if (!buf)
        return -1;
      c->jit_vals[at] = buf;
      *(info ? &c->info : &c->error) = buf;
      *(info ? &c->info_cap : &c->error_cap) = cap;
      *(info ? &c->info_at : &c->error_at) = (int)at;
    }
  }
  return 0;
}

static char *kept_log(const char *buf, uint64_t cap) {
  if (!buf)
    return NULL;
  const char *end = cap ? memchr(buf, 0, cap) : buf;
  size_t n = end ? (size_t)(end - buf) : cap;
  char *k = malloc(n + 1);
  if (k) {
    memcpy(k, buf, n);
    k[n] = 0;
  }
  return k;
}

static cg_load_outputs *outputs_of(const load_call *c, bool *oom) {
  cg_load_outputs *out = calloc(1, sizeof *out);
  if (!out) {
    *oom = true;
    return NULL;
  }
  for (unsigned i = 0; i < c->n_jit; i++) {
    uintptr_t v = (uintptr_t)c->jit_vals[i];
    switch (c->jit_keys[i]) {
    case CU_JIT_WALL_TIME: out->wall = true; memcpy(&out->wall_bits, &c->jit_vals[i], sizeof out->wall_bits); break;
    case CU_JIT_THREADS_PER_BLOCK: out->has_threads = true; out->threads = v; break;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: out->has_info_size = true; out->info_written = v; break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: out->has_error_size = true; out->error_written = v; break;
    default: break;
    }
  }
  out->info = kept_log(c->info, c->info_cap);
  out->error = kept_log(c->error, c->error_cap);
  if ((c->info && !out->info) || (c->error && !out->error)) {
    *oom = true;
    cg_load_outputs_free(out);
    return NULL;
  }
  return out;
}

typedef CUresult (*module_load_fn)(CUmodule *, const void *);
typedef CUresult (*module_load_ex_fn)(CUmodule *, const void *, unsigned int, CUjit_option *, void **);
typedef CUresult (*library_load_fn)(CUlibrary *, const void *, CUjit_option *, void **, unsigned int,
                                    CUlibraryOption *, void **, unsigned int);

CUresult cg_preload_load(const cg_prime_record *r, bool library, void **out, cg_load_outputs **outputs) {
  *outputs = NULL;
  cg_load_opts o = {0};
  if (r->n_options && cg_load_opts_decode(r->options, r->n_options, &o))
    return CUDA_ERROR_NOT_SUPPORTED; /* the reader checked it: never here */
  load_call c;
  if (build(&o, library, &c)) {
    free(c.info), free(c.error);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  CUresult res;
  if (!library && !c.n_jit) {
    module_load_fn load = CG_REAL(cuModuleLoadData, module_load_fn);
    res = load ? load((CUmodule *)out, r->bytes) : CUDA_ERROR_NOT_FOUND;
  } else if (!library) {
    module_load_ex_fn load = CG_REAL(cuModuleLoadDataEx, module_load_ex_fn);
    res = load ? load((CUmodule *)out, r->bytes, c.n_jit, (CUjit_option *)c.jit_keys, c.jit_vals)
               : CUDA_ERROR_NOT_FOUND;
  } else {
    library_load_fn load = CG_REAL(cuLibraryLoadData, library_load_fn);
    /* With CU_LIBRARY_BINARY_IS_PRESERVED the driver may keep using these
     * bytes until the library is unloaded: they are the priming set's own,
     * kept for the process's life (priming.c). */
    res = load ? load((CUlibrary *)out, r->bytes, (CUjit_option *)c.jit_keys, c.jit_vals, c.n_jit,
                      (CUlibraryOption *)c.lib_keys, c.lib_vals, c.n_lib)
               : CUDA_ERROR_NOT_FOUND;
    /* A library loads into a context lazily, when first used there: make
     * that happen now, before capture, not at the first cuLibraryGetKernel
     * inside it. */
    CUmodule m;
    if (res == CUDA_SUCCESS && cg_drv.LibraryGetModule)
      cg_drv.LibraryGetModule(&m, (CUlibrary)*out);
  }
  bool written = false;
  for (unsigned i = 0; i < c.n_jit; i++)
    written |= cg_load_opt_written(CG_OPT_JIT, (uint32_t)c.jit_keys[i]);
  if (res == CUDA_SUCCESS && written) {
    bool oom = false;
    *outputs = outputs_of(&c, &oom);
    if (oom)
      cg_warn_oom("keeping a preload's JIT log and wall time: loads asking for them are not served");
  }
  free(c.info), free(c.error);
  return res;
}

bool cg_load_outputs_cover(const cg_load_outputs *o, const cg_load_opts_raw *raw) {
  for (unsigned i = 0; raw && i < raw->n_jit; i++)
    if (cg_load_opt_written(CG_OPT_JIT, (uint32_t)raw->jit_keys[i]) && !o)
      return false;
  return true;
}

/* The caller's buffer size for a log: its size option's input value. */
static uint64_t caller_cap(const cg_load_opts_raw *raw, int size_key) {
  for (unsigned i = 0; i < raw->n_jit; i++)
    if (raw->jit_keys[i] == size_key)
      return (uint32_t)(uintptr_t)raw->jit_vals[i];
  return 0;
}

static void copy_log(char *to, uint64_t cap, const char *log) {
  if (!to || !cap || !log)
    return;
  size_t n = strlen(log);
  if (n > cap - 1)
    n = (size_t)cap - 1;
  memcpy(to, log, n);
  to[n] = 0;
}

void cg_load_outputs_write(const cg_load_outputs *o, const cg_load_opts_raw *raw) {
  if (!o || !raw)
    return;
  /* The sizes first: the size slots are overwritten below. */
  uint64_t info_cap = caller_cap(raw, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
  uint64_t error_cap = caller_cap(raw, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  for (unsigned i = 0; i < raw->n_jit; i++) {
    switch (raw->jit_keys[i]) {
    case CU_JIT_WALL_TIME:
      if (o->wall)
        memcpy(&raw->jit_vals[i], &o->wall_bits, sizeof o->wall_bits);
      break;
    case CU_JIT_THREADS_PER_BLOCK:
      if (o->has_threads)
        raw->jit_vals[i] = (void *)o->threads;
      break;
    case CU_JIT_INFO_LOG_BUFFER: copy_log(raw->jit_vals[i], info_cap, o->info); break;
    case CU_JIT_ERROR_LOG_BUFFER: copy_log(raw->jit_vals[i], error_cap, o->error); break;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
      if (o->has_info_size)
        raw->jit_vals[i] = (void *)o->info_written;
      break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      if (o->has_error_size)
        raw->jit_vals[i] = (void *)o->error_written;
      break;
    default: break;
    }
  }
}

void cg_load_outputs_free(cg_load_outputs *o) {
  if (!o)
    return;
  free(o->info);
  free(o->error);
  free(o);
}
