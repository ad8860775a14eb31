/* fakecuda: the JIT options of cuModuleLoadDataEx and cuLibraryLoadData, as the driver
 * API documents them (cuda.h, CUjit_option). Inputs are kept on the module; only one
 * changes what the fake can show afterwards: CU_JIT_MAX_REGISTERS caps the registers a
 * PTX image's functions are compiled to (CU_FUNC_ATTRIBUTE_NUM_REGS). A cubin is
 * already compiled, so the cap does not apply to it, as on the real driver. The output
 * options are written on every load that returns, as the driver does:
 *   CU_JIT_WALL_TIME                    float milliseconds spent, in the value slot;
 *   CU_JIT_INFO_LOG_BUFFER (+ _SIZE_BYTES) a line saying what was loaded, NUL-ended,
 *                                       cut to the size given; the size option is
 *                                       replaced by the bytes written;
 *   CU_JIT_ERROR_LOG_BUFFER (+ _SIZE_BYTES) the same for errors: empty on success. */
#include "fake_internal.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Registers a PTX function is compiled to without a cap (a cubin's stay at 16). */
#define FC_PTX_NATURAL_REGS 40

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

CUresult fc_jit_begin(struct fc_jit *j, unsigned n, CUjit_option *opts, void **vals)
{
  memset(j, 0, sizeof *j);
  j->n = n;
  j->opts = opts;
  j->vals = vals;
  j->start_ms = now_ms();
  if (n > 0 && (opts == NULL || vals == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    if ((int)opts[i] < 0 || opts[i] >= CU_JIT_NUM_OPTIONS)
      return CUDA_ERROR_INVALID_VALUE;
    if (opts[i] == CU_JIT_MAX_REGISTERS)
      j->max_regs = (unsigned)(uintptr_t)vals[i];
  }
  return CUDA_SUCCESS;
}

static void write_log(struct fc_jit *j, CUjit_option buf_opt, CUjit_option size_opt, const char *text)
{
  char *buf = NULL;
  unsigned size_at = j->n;
  for (unsigned i = 0; i < j->n; i++) {
    if (j->opts[i] == buf_opt)
      buf = j->vals[i];
    if (j->opts[i] == size_opt)
      size_at = i;
  }
  if (buf == NULL || size_at == j->n)
    return;
  size_t cap = (size_t)(uintptr_t)j->vals[size_at];
  if (cap == 0)
    return;
  int n = snprintf(buf, cap, "%s", text);
  size_t wrote = n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
  j->vals[size_at] = (void *)(uintptr_t)wrote;
}

void fc_jit_end(struct fc_jit *j, CUresult rc, const char *what)
{
  char info[160];
  snprintf(info, sizeof info, "fakecuda: %s loaded%s", what, j->max_regs ? " with a register cap" : "");
  for (unsigned i = 0; i < j->n; i++)
    if (j->opts[i] == CU_JIT_WALL_TIME) {
      float ms = (float)(now_ms() - j->start_ms);
      memcpy(&j->vals[i], &ms, sizeof ms); /* the driver stores the float in the slot itself */
    }
  write_log(j, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, rc == CUDA_SUCCESS ? info : "");
  write_log(j, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            rc == CUDA_SUCCESS ? "" : "fakecuda: the image did not load");
}

int fc_jit_regs(const struct fc_module *m)
{
  if (m->kind != FC_IMG_PTX)
    return 16;
  return m->max_regs && m->max_regs < FC_PTX_NATURAL_REGS ? (int)m->max_regs : FC_PTX_NATURAL_REGS;
}

CUresult fc_library_options(unsigned n, CUlibraryOption *opts, void **vals, int from_file, int *preserved)
{
  *preserved = 0;
  if (n > 0 && (opts == NULL || vals == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    if ((int)opts[i] < 0 || opts[i] >= CU_LIBRARY_NUM_OPTIONS)
      return CUDA_ERROR_INVALID_VALUE;
    if (opts[i] == CU_LIBRARY_BINARY_IS_PRESERVED) {
      if (from_file) /* cuda.h: invalid with cuLibraryLoadFromFile */
        return CUDA_ERROR_INVALID_VALUE;
      *preserved = (unsigned)(uintptr_t)vals[i] != 0;
    }
  }
  return CUDA_SUCCESS;
}

/* Outputs and pointers are shown by key: their values are addresses. */
static int by_key_alone(CUjit_option o)
{
  return o == CU_JIT_WALL_TIME || o == CU_JIT_INFO_LOG_BUFFER || o == CU_JIT_ERROR_LOG_BUFFER ||
         o == CU_JIT_GLOBAL_SYMBOL_NAMES || o == CU_JIT_GLOBAL_SYMBOL_ADDRESSES ||
         o == CU_JIT_REFERENCED_KERNEL_NAMES || o == CU_JIT_REFERENCED_VARIABLE_NAMES;
}

void fc_options_text(char *buf, size_t cap, unsigned n_jit, const CUjit_option *jit, void *const *jit_vals,
                     unsigned n_lib, const CUlibraryOption *lib, void *const *lib_vals)
{
  size_t at = 0;
  buf[0] = 0;
  for (unsigned i = 0; i < n_jit && at < cap; i++) {
    int w = by_key_alone(jit[i]) ? snprintf(buf + at, cap - at, "%s%d", i ? "," : "jit:", (int)jit[i])
                                 : snprintf(buf + at, cap - at, "%s%d=%u", i ? "," : "jit:", (int)jit[i],
                                            (unsigned)(uintptr_t)jit_vals[i]);
    at += w > 0 ? (size_t)w : 0;
  }
  for (unsigned i = 0; i < n_lib && at < cap; i++) {
    int w = lib[i] == CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE
                ? snprintf(buf + at, cap - at, "%s%d", i ? "," : (n_jit ? ";lib:" : "lib:"), (int)lib[i])
                : snprintf(buf + at, cap - at, "%s%d=%u", i ? "," : (n_jit ? ";lib:" : "lib:"), (int)lib[i],
                           (unsigned)(uintptr_t)lib_vals[i]);
    at += w > 0 ? (size_t)w : 0;
  }
}

void fc_loads_note(const char *call, const void *handle, const char *made_with)
{
  const char *path = getenv("FAKECUDA_LOADS");
  if (path == NULL || *path == '\0')
    return;
  FILE *f = fopen(path, "ae");
  if (f == NULL)
    return;
  fprintf(f, "%s handle=%p options=%s\n", call, handle, made_with[0] ? made_with : "none");
  fclose(f);
}
