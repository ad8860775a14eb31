/* Stack capture for the shim: where the calling thread is, natively and in
 * Python. Runs inside a CUDA driver call of someone else's process, possibly on
 * a thread that released the GIL: never takes the GIL, bounded in time and
 * memory (no heap use after cg_stack_init, save the dynamic loader's own
 * when a lazy Python lookup runs), and degrades to "no frames".
 * Lock order: backtrace() and dladdr() take the dynamic loader's lock, so
 * call these without holding capguard's own locks (a thread inside dlopen
 * holds the loader's lock and may enter the shim from a constructor). */
#ifndef CAPGUARD_STACK_H
#define CAPGUARD_STACK_H

#include <stdbool.h>
#include <stddef.h>

#include "capguard/image.h" /* cg_hash128 */

#include "capguard/kernel_name.h" /* cg_demangle_fn */
#include "capguard/event.h"   /* cg_py_frame {const char *file; int line; const char *func;} */

/* Dependency: the real dlsym (the shim interposes dlsym), base/real_dlsym.h;
 * while it is NULL the Python lookup finds nothing. */
#include "real_dlsym.h"

/* Call once early (the shim's constructor): resolves what is needed and warms up
 * glibc's backtrace() (its first call dlopens libgcc_s and allocates). */
void cg_stack_init(void);
/* The calling thread's native stack, innermost first, skipping `skip` frames of
 * capguard itself. Each frame symbolized with dladdr as "libfoo.so(func+0x1a) [0x7f..]"
 * or "libfoo.so+0x1234 [0x7f..]" when no symbol; strings live in buf. Returns frames written. */
size_t cg_native_stack(int skip, const char **out, size_t max, char *buf, size_t bufcap);
/* The same stack, starting at the first frame outside capguard's own
 * object, as return addresses: nothing symbolised (backtrace() only), so
 * that an event no one writes costs no dladdr. */
size_t cg_native_frames(void **out, size_t max);
/* frames[0..n) as cg_native_stack writes them (strings in buf), each
 * address looked up once per process (symbol_cache.h). Returns frames
 * written: fewer when buf is full. */
size_t cg_native_symbolize(void *const *frames, size_t n, const char **out, char *buf, size_t bufcap);
/* The same in the form a person reads (readable_frame.h: demangled, " at
 * file.c:12" where the object's line table says) for the first
 * CG_TEXT_NATIVE_FRAMES (those stderr's lines show; the rest as
 * cg_native_symbolize writes them); the log keeps cg_native_symbolize's,
 * which capguard report resolves itself. */
size_t cg_native_symbolize_readable(void *const *frames, size_t n, const char **out, char *buf, size_t bufcap);
/* frames[0..n) as "obj+0xoff [0xaddr]", each object found in the
 * loader's list (no symbol lookup: cheap enough for a request's load);
 * capguard report names them from the objects' files. Returns frames
 * written. */
size_t cg_native_offsets(void *const *frames, size_t n, const char **out, char *buf, size_t bufcap);
/* The calling thread's Python stack, innermost first, when the process runs CPython
 * and this thread has a Python thread state; 0 otherwise. Strings live in buf. */
size_t cg_python_stack(cg_py_frame *out, size_t max, char *buf, size_t bufcap);
/* Whether an interpreter may be there to read: found, or looked for again
 * now (each CG_PY_RETRY_EVERY-th ask, as cg_python_stack). A process
 * without one pays this at a begin, not the dump's way (about 120
 * instructions a capture). */
bool cg_python_maybe(void);
/* The calling thread's Python thread state, NULL without one (a thread
 * Python never ran on, or no interpreter). */
void *cg_python_this_state(void);
/* cg_python_stack for another thread's state (the hang watcher's: that
 * thread waits inside a driver call, so its frames do not change while
 * they are read; faulthandler's watchdog reads them the same way). */
size_t cg_python_stack_of(void *tstate, cg_py_frame *out, size_t max, char *buf, size_t bufcap);
/* The first of n return addresses saved earlier (backtrace(), innermost
 * first) outside capguard's own object, libcuda and libcudart, in the form
 * a person reads, without the address: "libfoo.so(ns::func()+0x1a) at
 * foo.cc:12" (readable_frame.h; capguard report prints such a site as it
 * is); "" and 0 when there is none. Returns length. */
size_t cg_native_where_frames(void *const *frames, size_t n, char *buf, size_t cap);
/* Another thread's probable callers (stack_scan.c): return addresses found
 * in the words of its stack above ra_slot (where its wrapper's return
 * address is stored), outermost last, at most max; for a thread that waits
 * in a call meanwhile (the hang watcher's). Reads with process_vm_readv:
 * never a fault. */
size_t cg_native_scan_callers(const void *ra_slot, void **out, size_t max);
#define CG_WHERE_FRAMES 16 /* longer lists are symbolized, never kept */
/* The host's C++ demangler (__cxa_demangle) when the process has a C++
 * runtime loaded already (never loaded for it), NULL otherwise: for kernel
 * names on stderr (capguard/kernel_name.h). Takes the loader's lock the
 * first time: never with capguard's own locks held. */
cg_demangle_fn cg_host_demangler(void);
void cg_native_where_atfork_child(void);

/* ---- cheap enough for every capture begin */

/* Where the caller of a wrapper is, natively: frames innermost first,
 * starting at the wrapper's return address ra (its caller), up to and
 * including the first frame outside capguard, libcuda and libcudart; no
 * unwinding when ra itself is outside them, and none when an earlier call
 * from ra took the same path (stack_site.c). ra_slot: where ra is stored
 * (the wrapper's __builtin_dwarf_cfa() minus a word). Without ra, or when
 * the path cannot be checked, glibc's backtrace from the caller (capguard's
 * frames included). Returns frames written. */
size_t cg_native_site(void *ra, void *ra_slot, void **frames, size_t max);
/* Part of cg_stack_init: finds _dl_find_object and libgcc's unwinder. */
void cg_native_site_init(void);
void cg_native_site_atfork_child(void); /* fork: the lock starts released */

/* A fingerprint of the calling thread's innermost Python frames, read in
 * place without a system call: each frame's code object and instruction.
 * Two calls with the same fingerprint have the same innermost 16 frames,
 * lines included (cg_python_stack's output is the same). For CPython 3.11
 * to 3.13 (release builds); UNKNOWN elsewhere (read the frames with
 * cg_python_stack), NONE when the thread runs no Python. */
enum { CG_PY_FP_NONE, CG_PY_FP_OK, CG_PY_FP_UNKNOWN };
int cg_python_fingerprint(cg_hash128 *out);
/* The same over at most max_raw raw frames (shim frames included; at most
 * the 32 cg_python_fingerprint reads): *named says how many of them the
 * dump would name, *whole whether they are all the thread's frames. A
 * fingerprint of fewer frames is a different key from a longer one's. */
int cg_python_fingerprint_short(cg_hash128 *out, int max_raw, int *named, bool *whole);
/* Checks the in-place reading against the interpreter's own dump (same
 * number of frames) on the calling thread; on a mismatch fingerprints are
 * turned off for good (UNKNOWN). True when they agreed. */
bool cg_python_fingerprint_check(void);

#endif
