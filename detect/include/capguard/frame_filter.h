/* Which native frames say nothing about who made a driver call: capguard's
 * own, and the CUDA libraries every call goes through (the driver
 * libcuda.so.1, the runtime libcudart.so.12 or a wheel's
 * libcudart-<hash>.so.12), and in a sanitized build the sanitizer runtime
 * that intercepts backtrace(). The shim skips them for "where a capture began",
 * the report for a call's site: one rule for both. */
#ifndef CAPGUARD_FRAME_FILTER_H
#define CAPGUARD_FRAME_FILTER_H

#include <stdbool.h>

/* object: an object's base name ("libcuda.so.1"), or a frame as the log
 * holds it, which starts with one ("libcuda.so.1(cuModuleLoadData+0x1a) [0x7f..]"). */
bool cg_frame_is_plumbing(const char *object);

/* A Python file of Triton's, torch's, CuPy's, Numba's or Warp's own machinery: the line a person wrote
 * is further out. */
bool cg_py_file_is_machinery(const char *file);

#endif
