/* Wrappers for module and library loads and unloads. With nothing capturing
 * (or in off mode) each is one atomic load and a call to the driver; while
 * something captures, guard.c decides. */
#include "guard.h"
#include "wrapper.h"

static bool pass(void) { return cg_nothing_captures() || cg_cfg.mode == CG_RUN_OFF; }

/* ---- loads: each wrapper packs its arguments and a way to make the real call. */

typedef CUresult (*module_load_fn)(CUmodule *, const char *);
typedef CUresult (*module_load_data_fn)(CUmodule *, const void *);
typedef CUresult (*module_load_data_ex_fn)(CUmodule *, const void *, unsigned int, CUjit_option *, void **);
typedef CUresult (*library_load_data_fn)(CUlibrary *, const void *, CUjit_option *, void **, unsigned int,
                                         CUlibraryOption *, void **, unsigned int);
typedef CUresult (*library_load_file_fn)(CUlibrary *, const char *, CUjit_option *, void **, unsigned int,
                                         CUlibraryOption *, void **, unsigned int);

typedef CUresult (*module_unload_fn)(CUmodule);
typedef CUresult (*library_unload_fn)(CUlibrary);

typedef struct {
  void *real;
  CUjit_option *jit_opts;
  void **jit_vals;
  unsigned int n_jit;
  CUlibraryOption *lib_opts;
  void **lib_vals;
  unsigned int n_lib;
} load_args;

static CUresult invoke_module_load(const cg_load *l) {
  const load_args *a = l->args;
  return ((module_load_fn)a->real)((CUmodule *)l->out, l->path);
}
static CUresult invoke_module_load_data(const cg_load *l) {
  const load_args *a = l->args;
  return ((module_load_data_fn)a->real)((CUmodule *)l->out, l->image);
}
static CUresult invoke_module_load_data_ex(const cg_load *l) {
  const load_args *a = l->args;
  return ((module_load_data_ex_fn)a->real)((CUmodule *)l->out, l->image, a->n_jit, a->jit_opts, a->jit_vals);
}
static CUresult invoke_library_load_data(const cg_load *l) {
  const load_args *a = l->args;
  return ((library_load_data_fn)a->real)((CUlibrary *)l->out, l->image, a->jit_opts, a->jit_vals, a->n_jit,
                                         a->lib_opts, a->lib_vals, a->n_lib);
}
static CUresult invoke_library_load_file(const cg_load *l) {
  const load_args *a = l->args;
  return ((library_load_file_fn)a->real)((CUlibrary *)l->out, l->path, a->jit_opts, a->jit_vals, a->n_jit,
                                         a->lib_opts, a->lib_vals, a->n_lib);
}

CG_WRAPPER(CUresult, cuModuleLoad, (CUmodule * module, const char *fname)) {
  CG_REAL_OR_RETURN(cuModuleLoad, module_load_fn, real);
  if (pass() || !fname)
    return real(module, fname);
  load_args a = {.real = (void *)real};
  cg_load l = {CG_EP_cuModuleLoad, NULL, fname, false, (void **)module, invoke_module_load, &a};
  return cg_guard_load(&l);
}

CG_WRAPPER(CUresult, cuModuleLoadData, (CUmodule * module, const void *image)) {
  CG_REAL_OR_RETURN(cuModuleLoadData, module_load_data_fn, real);
  if (pass() || !image)
    return real(module, image);
  load_args a = {.real = (void *)real};
  cg_load l = {CG_EP_cuModuleLoadData, image, NULL, false, (void **)module, invoke_module_load_data, &a};
  return cg_guard_load(&l);
}

CG_WRAPPER(CUresult, cuModuleLoadDataEx,
           (CUmodule * module, const void *image, unsigned int n, CUjit_option *opts, void **vals)) {
  CG_REAL_OR_RETURN(cuModuleLoadDataEx, module_load_data_ex_fn, real);
  if (pass() || !image)
    return real(module, image, n, opts, vals);
  load_args a = {.real = (void *)real, .jit_opts = opts, .jit_vals = vals, .n_jit = n};
  cg_load l = {CG_EP_cuModuleLoadDataEx, image, NULL, false, (void **)module, invoke_module_load_data_ex, &a};
  return cg_guard_load(&l);
}

CG_WRAPPER(CUresult, cuModuleLoadFatBinary, (CUmodule * module, const void *fat)) {
  CG_REAL_OR_RETURN(cuModuleLoadFatBinary, module_load_data_fn, real);
  if (pass() || !fat)
    return real(module, fat);
  load_args a = {.real = (void *)real};
  cg_load l = {CG_EP_cuModuleLoadFatBinary, fat, NULL, false, (void **)module, invoke_module_load_data, &a};
  return cg_guard_load(&l);
}

CG_WRAPPER(CUresult, cuLibraryLoadData,
           (CUlibrary * lib, const void *code, CUjit_option *jo, void **jv, unsigned int nj, CUlibraryOption *lo,
            void **lv, unsigned int nl)) {
  CG_REAL_OR_RETURN(cuLibraryLoadData, library_load_data_fn, real);
  if (pass() || !code)
    return real(lib, code, jo, jv, nj, lo, lv, nl);
  load_args a = {(void *)real, jo, jv, nj, lo, lv, nl};
  cg_load l = {CG_EP_cuLibraryLoadData, code, NULL, true, (void **)lib, invoke_library_load_data, &a};
  return cg_guard_load(&l);
}

CG_WRAPPER(CUresult, cuLibraryLoadFromFile,
           (CUlibrary * lib, const char *fname, CUjit_option *jo, void **jv, unsigned int nj, CUlibraryOption *lo,
            void **lv, unsigned int nl)) {
  CG_REAL_OR_RETURN(cuLibraryLoadFromFile, library_load_file_fn, real);
  if (pass() || !fname)
    return real(lib, fname, jo, jv, nj, lo, lv, nl);
  load_args a = {(void *)real, jo, jv, nj, lo, lv, nl};
  cg_load l = {CG_EP_cuLibraryLoadFromFile, NULL, fname, true, (void **)lib, invoke_library_load_file, &a};
  return cg_guard_load(&l);
}

/* ---- unloads */

static CUresult real_module_unload(void *h) {
  return CG_REAL(cuModuleUnload, module_unload_fn)((CUmodule)h);
}
static CUresult real_library_unload(void *h) {
  return CG_REAL(cuLibraryUnload, library_unload_fn)((CUlibrary)h);
}

CG_WRAPPER(CUresult, cuModuleUnload, (CUmodule module)) {
  CG_REAL_OR_RETURN(cuModuleUnload, module_unload_fn, real);
  if (pass())
    return real(module);
  cg_unload u = {CG_EP_cuModuleUnload, (void *)module, false, real_module_unload};
  return cg_guard_unload(&u);
}

CG_WRAPPER(CUresult, cuLibraryUnload, (CUlibrary lib)) {
  CG_REAL_OR_RETURN(cuLibraryUnload, library_unload_fn, real);
  if (pass())
    return real(lib);
  cg_unload u = {CG_EP_cuLibraryUnload, (void *)lib, true, real_library_unload};
  return cg_guard_unload(&u);
}
