/* fakecuda: modules, libraries, functions and kernels.
 * Ground truth: loads are refused (900, captures invalidated) while a capture prohibits
 * the calling thread only on drivers before 12.3; unloads are refused on every driver.
 * Unloaded modules and libraries stay registered as dead tombstones so that a second
 * unload of the same handle is answered CUDA_ERROR_INVALID_HANDLE, never a crash and
 * never the unload of an unrelated module that got the same address. */
#include "fake_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FC_FILE_MAX ((off_t)1 << 30)
#define FC_MODULE_LOAD_ALLOWED_IN_CAPTURE 12030

struct fc_library {
  struct fc_handle h;
  struct fc_module *mod;
  struct fc_kernel *kernels;
};

struct fc_kernel {
  struct fc_handle h;
  struct fc_function *fn;
  struct fc_kernel *next;
};

struct fc_function *fc_function_live(CUfunction f)
{
  return (struct fc_function *)fc_lookup(f, FC_FUNCTION);
}

struct fc_function *fc_function_or_kernel(CUfunction f)
{
  struct fc_function *fn = fc_function_live(f);
  if (fn != NULL)
    return fn;
  struct fc_kernel *k = (struct fc_kernel *)fc_lookup(f, FC_KERNEL);
  return (k != NULL && k->fn->h.alive) ? k->fn : NULL;
}

static CUresult load_rule(void)
{
  if (fc_env_driver_version() < FC_MODULE_LOAD_ALLOWED_IN_CAPTURE)
    return fc_refuse_if_prohibited();
  return CUDA_SUCCESS;
}

/* limit: the bytes the image may span (a file's size), 0 when only the pointer is known. */
/* borrow: keep the caller's bytes instead of a copy (CU_LIBRARY_BINARY_IS_PRESERVED: the
 * caller promised they live until the unload; a kernel lookup reads them then). */
static CUresult module_create_as(const void *image, size_t limit, int borrow, struct fc_module **out)
{
  if (image == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  enum fc_image_kind kind;
  const unsigned char *start;
  size_t size;
  CUresult rc = fc_image_inspect(image, limit, fc_env_sm(), &kind, &start, &size);
  if (rc != CUDA_SUCCESS)
    return rc;
  struct fc_module *m = calloc(1, sizeof(*m));
  unsigned char *copy = m != NULL && !borrow ? malloc(size) : (unsigned char *)start;
  if (m == NULL || copy == NULL) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!borrow)
    memcpy(copy, start, size);
  m->borrowed = borrow;
  m->kind = kind;
  m->ctx = fc_current_ctx();
  m->image = copy;
  m->size = size;
  fc_register(&m->h, m, FC_MODULE);
  *out = m;
  return CUDA_SUCCESS;
}

static CUresult module_create(const void *image, size_t limit, struct fc_module **out)
{
  return module_create_as(image, limit, 0, out);
}

/* Reads a whole file, NUL-terminated (PTX files are text without a terminator). */
static CUresult read_file(const char *path, unsigned char **out, size_t *len)
{
  if (path == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return CUDA_ERROR_FILE_NOT_FOUND;
  struct stat sb;
  unsigned char *buf = NULL;
  CUresult rc = CUDA_ERROR_INVALID_IMAGE;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 && sb.st_size < FC_FILE_MAX &&
      (buf = calloc(1, (size_t)sb.st_size + 1)) != NULL) {
    size_t got = 0;
    while (got < (size_t)sb.st_size) {
      ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
      if (r <= 0)
        break;
      got += (size_t)r;
    }
    if (got == (size_t)sb.st_size)
      rc = CUDA_SUCCESS;
  }
  close(fd);
  if (rc != CUDA_SUCCESS)
    free(buf);
  else {
    *out = buf;
    *len = (size_t)sb.st_size + 1;
  }
  return rc;
}

static CUresult module_load_jit(CUmodule *module, const void *image, size_t limit, unsigned max_regs)
{
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = load_rule();
  if (rc == CUDA_SUCCESS && module == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_module *m = NULL;
  if (rc == CUDA_SUCCESS && (rc = module_create(image, limit, &m)) == CUDA_SUCCESS) {
    m->max_regs = max_regs;
    *module = (CUmodule)m;
  }
  return rc;
}

static CUresult module_load(CUmodule *module, const void *image, size_t limit)
{
  return module_load_jit(module, image, limit, 0);
}

static CUresult module_load_file(CUmodule *module, const char *fname)
{
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = load_rule();
  unsigned char *buf = NULL;
  size_t len = 0;
  if (rc == CUDA_SUCCESS)
    rc = read_file(fname, &buf, &len);
  if (rc == CUDA_SUCCESS) {
    rc = module_load(module, buf, len);
    free(buf);
  }
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
  FC_BEGIN;
  FC_END(module_load_file(module, fname));
}

FC_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
  FC_BEGIN;
  FC_END(module_load(module, image, 0));
}

FC_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
    unsigned int numOptions, CUjit_option *options, void **optionValues)
{
  FC_BEGIN;
  struct fc_jit j;
  char made_with[256];
  CUresult rc = fc_jit_begin(&j, numOptions, options, optionValues);
  if (rc == CUDA_SUCCESS) {
    fc_options_text(made_with, sizeof made_with, numOptions, options, optionValues, 0, NULL, NULL);
    rc = module_load_jit(module, image, 0, j.max_regs);
    fc_jit_end(&j, rc, "module");
  }
  if (rc == CUDA_SUCCESS) {
    struct fc_module *m = (struct fc_module *)*module;
    snprintf(m->made_with, sizeof m->made_with, "%s", made_with);
    fc_loads_note(__func__, m, made_with);
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
  FC_BEGIN;
  FC_END(module_load(module, fatCubin, 0));
}

/* Frees what an unloaded module owned; the module and function structs stay as tombstones. */
static void module_kill(struct fc_module *m)
{
  for (struct fc_function *f = m->funcs; f != NULL; f = f->next) {
    f->h.alive = 0;
    free(f->name);
    f->name = NULL;
  }
  if (!m->borrowed)
    free(m->image);
  m->image = NULL;
  m->size = 0;
  m->h.alive = 0;
}

static void die_with(struct fc_handle *h, void *ctx)
{
  struct fc_module *m = (struct fc_module *)h;
  if (h->alive && m->lib == NULL && m->ctx == ctx)
    module_kill(m);
}

void fc_modules_die_with(struct fc_ctx *ctx)
{
  fc_foreach(FC_MODULE, die_with, ctx);
}

FC_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_module *m = (struct fc_module *)fc_lookup(hmod, FC_MODULE);
  if (rc == CUDA_SUCCESS && (m == NULL || m->lib != NULL))
    rc = CUDA_ERROR_INVALID_HANDLE;     /* unknown, already unloaded, or a library's */
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS)
    module_kill(m);
  FC_END(rc);
}

static CUresult get_function(struct fc_module *m, const char *name, struct fc_function **out)
{
  for (struct fc_function *f = m->funcs; f != NULL; f = f->next) {
    if (strcmp(f->name, name) == 0) {
      *out = f;
      return CUDA_SUCCESS;
    }
  }
  if (!fc_image_has_name(m->kind, m->image, m->size, name))
    return CUDA_ERROR_NOT_FOUND;
  struct fc_function *f = calloc(1, sizeof(*f));
  char *copy = f != NULL ? strdup(name) : NULL;
  if (copy == NULL) {
    free(f);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  f->mod = m;
  f->name = copy;
  f->max_dynamic_shmem = 49152;
  f->next = m->funcs;
  m->funcs = f;
  fc_register(&f->h, f, FC_FUNCTION);
  *out = f;
  return CUDA_SUCCESS;
}

FC_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_module *m = (struct fc_module *)fc_lookup(hmod, FC_MODULE);
  if (rc == CUDA_SUCCESS && m == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && (hfunc == NULL || name == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_function *f = NULL;
  if (rc == CUDA_SUCCESS && (rc = get_function(m, name, &f)) == CUDA_SUCCESS)
    *hfunc = (CUfunction)f;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                                const char *name)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_module *m = (struct fc_module *)fc_lookup(hmod, FC_MODULE);
  if (rc == CUDA_SUCCESS && m == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && name == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  else if (rc == CUDA_SUCCESS && !fc_image_has_name(m->kind, m->image, m->size, name))
    rc = CUDA_ERROR_NOT_FOUND;
  if (rc == CUDA_SUCCESS) {
    /* A stable, distinct address; the fake does not back globals with memory. */
    const unsigned char *where = memmem(m->image, m->size, name, strlen(name));
    if (dptr != NULL)
      *dptr = (CUdeviceptr)(uintptr_t)where;
    if (bytes != NULL)
      *bytes = 8;
  }
  FC_END(rc);
}

static CUresult library_wrap(struct fc_module *m, CUlibrary *library)
{
  struct fc_library *l = calloc(1, sizeof(*l));
  if (l == NULL) {
    module_kill(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  l->mod = m;
  m->lib = l;
  fc_register(&l->h, l, FC_LIBRARY);
  *library = (CUlibrary)l;
  return CUDA_SUCCESS;
}

static CUresult library_load(CUlibrary *library, const void *code, const char *path, unsigned max_regs,
                             int preserved)
{
  CUresult rc = fc_need_ctx();
  if (rc == CUDA_SUCCESS)
    rc = load_rule();
  if (rc == CUDA_SUCCESS && library == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  unsigned char *buf = NULL;
  size_t len = 0;
  if (rc == CUDA_SUCCESS && path != NULL && (rc = read_file(path, &buf, &len)) == CUDA_SUCCESS)
    code = buf;
  struct fc_module *m = NULL;
  if (rc == CUDA_SUCCESS && (rc = module_create_as(code, len, preserved && !buf, &m)) == CUDA_SUCCESS) {
    m->max_regs = max_regs;
    rc = library_wrap(m, library);
  }
  free(buf);
  return rc;
}

/* A library load with its JIT and library options, from code or the file path. */
static CUresult library_load_opts(CUlibrary *library, const void *code, const char *path, CUjit_option *jit,
                                  void **jit_vals, unsigned n_jit, CUlibraryOption *lib, void **lib_vals,
                                  unsigned n_lib, const char *call)
{
  struct fc_jit j;
  int preserved = 0;
  char made_with[256];
  CUresult rc = fc_jit_begin(&j, n_jit, jit, jit_vals);
  if (rc == CUDA_SUCCESS)
    rc = fc_library_options(n_lib, lib, lib_vals, path != NULL, &preserved);
  if (rc != CUDA_SUCCESS)
    return rc;
  fc_options_text(made_with, sizeof made_with, n_jit, jit, jit_vals, n_lib, lib, lib_vals);
  rc = code == NULL && path == NULL ? CUDA_ERROR_INVALID_VALUE
                                    : library_load(library, code, path, j.max_regs, preserved);
  fc_jit_end(&j, rc, "library");
  if (rc == CUDA_SUCCESS) {
    struct fc_library *l = (struct fc_library *)*library;
    snprintf(l->mod->made_with, sizeof l->mod->made_with, "%s", made_with);
    fc_loads_note(call, l, made_with);
  }
  return rc;
}

FC_EXPORT CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
    CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions,
    CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)
{
  FC_BEGIN;
  FC_END(library_load_opts(library, code, NULL, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                           libraryOptionValues, numLibraryOptions, __func__));
}

FC_EXPORT CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
    CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions,
    CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)
{
  FC_BEGIN;
  if (fileName == NULL)
    FC_END(CUDA_ERROR_INVALID_VALUE);
  FC_END(library_load_opts(library, NULL, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                           libraryOptionValues, numLibraryOptions, __func__));
}

FC_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_library *l = (struct fc_library *)fc_lookup(library, FC_LIBRARY);
  if (rc == CUDA_SUCCESS && l == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS)
    rc = fc_refuse_if_prohibited();
  if (rc == CUDA_SUCCESS) {
    for (struct fc_kernel *k = l->kernels; k != NULL; k = k->next)
      k->h.alive = 0;
    module_kill(l->mod);
    l->h.alive = 0;
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_library *l = (struct fc_library *)fc_lookup(library, FC_LIBRARY);
  if (rc == CUDA_SUCCESS && l == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && (pKernel == NULL || name == NULL))
    rc = CUDA_ERROR_INVALID_VALUE;
  struct fc_function *f = NULL;
  if (rc == CUDA_SUCCESS)
    rc = get_function(l->mod, name, &f);
  struct fc_kernel *k = NULL;
  if (rc == CUDA_SUCCESS) {
    for (k = l->kernels; k != NULL && k->fn != f; k = k->next)
      ;
    if (k == NULL && (k = calloc(1, sizeof(*k))) == NULL) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (k->fn == NULL) {
      k->fn = f;
      k->next = l->kernels;
      l->kernels = k;
      fc_register(&k->h, k, FC_KERNEL);
    }
  }
  if (rc == CUDA_SUCCESS)
    *pKernel = (CUkernel)k;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_library *l = (struct fc_library *)fc_lookup(library, FC_LIBRARY);
  if (rc == CUDA_SUCCESS && l == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && pMod == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *pMod = (CUmodule)l->mod;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
  FC_BEGIN;
  CUresult rc = fc_need_ctx();
  struct fc_kernel *k = (struct fc_kernel *)fc_lookup(kernel, FC_KERNEL);
  if (rc == CUDA_SUCCESS && k == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && pFunc == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *pFunc = (CUfunction)k->fn;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_function *f = fc_function_live(hfunc);
  if (rc == CUDA_SUCCESS && f == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && name == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *name = f->name;
  FC_END(rc);
}

/* CUDA 11.0 and later: the module a function belongs to (a library's functions: the
 * library's module). */
FC_EXPORT CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_function *f = fc_function_live(hfunc);
  if (rc == CUDA_SUCCESS && f == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && hmod == NULL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    *hmod = (CUmodule)f->mod;
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_function *f = fc_function_live(hfunc);
  if (rc == CUDA_SUCCESS && f == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && (pi == NULL || (int)attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX))
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS) {
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = fc_jit_regs(f->mod); break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: /* fall through */
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = fc_env_sm(); break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dynamic_shmem; break;
    default: *pi = 0; break;
    }
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_function *f = fc_function_live(hfunc);
  if (rc == CUDA_SUCCESS && f == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  if (rc == CUDA_SUCCESS) {
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > 232448)
        rc = CUDA_ERROR_INVALID_VALUE;
      else
        f->max_dynamic_shmem = value;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      break;                            /* accepted, not modelled */
    default:
      rc = CUDA_ERROR_INVALID_VALUE;    /* read-only or unknown */
    }
  }
  FC_END(rc);
}

FC_EXPORT CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
  FC_BEGIN;
  CUresult rc = fc_need_init();
  struct fc_function *f = fc_function_live(hfunc);
  if (rc == CUDA_SUCCESS && f == NULL)
    rc = CUDA_ERROR_INVALID_HANDLE;
  else if (rc == CUDA_SUCCESS && (unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
    rc = CUDA_ERROR_INVALID_VALUE;
  if (rc == CUDA_SUCCESS)
    f->cache_config = (int)config;
  FC_END(rc);
}
