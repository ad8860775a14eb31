/* Where an event was made, in one line a person can read and that compares
 * equal across processes: the innermost Python frame outside Triton's and
 * torch's machinery, else the innermost native frame outside capguard and the
 * driver, its absolute address dropped (ASLR), its C++ name demangled, and its
 * source line added where debug info gives it. */
#ifndef CAPGUARD_LOG_SITE_H
#define CAPGUARD_LOG_SITE_H

#include <stdbool.h>
#include <stddef.h>

#include "log_json.h"

/* python: array of {"file","line","func"}; native: array of strings; either may
 * be NULL; argv0: the process's argv[0] (finds its executable for file:line),
 * may be NULL. A native site ends in " at file.c:123" when the object is found
 * here with debug info. Writes "(no stack)" when neither stack has a frame. */
void cgl_site_from_stacks(const cgl_jv *python, const cgl_jv *native, const char *argv0, char *buf,
                          size_t cap);
/* The innermost Python frame "file:line in func" (machinery included), "" if none. */
void cgl_python_top(const cgl_jv *python, char *buf, size_t cap);
/* "lib.so(_ZN2at4cuda9CUDAGraph13capture_beginEv+0x29c) [0x7f..]" becomes
 * "lib.so(at::cuda::CUDAGraph::capture_begin()+0x29c)". */
void cgl_readable_frame(const char *frame, char *buf, size_t cap);

/* A site the shim wrote as one string (where a capture began, where its first
 * offender was called): a native frame made readable as an event's is
 * (demangled, " at file.c:123" where debug info says); anything else (a
 * Python "file:line in func") as it is. */
void cgl_readable_site(const char *text, const char *argv0, char *buf, size_t cap);

/* Whether a native stack shows the CUDA runtime loading a module lazily, at
 * a kernel's first launch (CUDA_MODULE_LOADING=LAZY, the default since CUDA
 * 12.2): __cudaGetKernel or cudaGetFuncBySymbol, or libcudart's own
 * lazy-loading frames. native: array of strings, may be NULL. */
bool cgl_stack_runtime_lazy(const cgl_jv *native);

#endif
