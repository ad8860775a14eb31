/* A kernel's name as a person reads it in a sentence: C++ names (torch's,
 * hundreds of characters mangled) demangled, then without their return
 * type, template arguments ("<...>") and parameter list:
 *   _ZN2at6native...CatArrayBatchedCopy...  ->
 *   at::native::(anonymous namespace)::CatArrayBatchedCopy<...>
 * Names that are not mangled (Triton's, extern "C" kernels) or that do not
 * demangle are kept exactly as they are. The demangler is a parameter: the
 * command links libstdc++'s __cxa_demangle, the shim borrows the host's
 * when the host has one loaded, and has none otherwise. */
#ifndef CAPGUARD_KERNEL_NAME_H
#define CAPGUARD_KERNEL_NAME_H

#include <stddef.h>

/* The C++ ABI's __cxa_demangle: a malloc'd name, or NULL with *status != 0. */
typedef char *(*cg_demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

/* Writes demangled, shortened as above, and a NUL into out[0, cap) (as much
 * as fits); returns the length of the whole shortened name (like snprintf).
 * Pure string code: no allocation. */
size_t cg_kernel_name_shorten(const char *demangled, char *out, size_t cap);

/* The display form of name: demangled by dm (NULL: none) when it is a
 * mangled C++ name ("_Z..."), then shortened; otherwise name itself. Writes
 * into out[0, cap) and returns the whole length, as cg_kernel_name_shorten. */
size_t cg_kernel_display_name(const char *name, cg_demangle_fn dm, char *out, size_t cap);

#endif
