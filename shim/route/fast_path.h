/* The hottest wrappers' fast path (launches, copies, cuEventRecord,
 * cuStreamQuery): the driver's pointer and the capture activity loaded, and
 * one jump, to the driver or to everything else (sname "_cg_other", the
 * wrapper's C body: finding the driver, off mode, the decision). On x86-64
 * it is written out: gcc keeps a stack frame on a C fast path whose cold
 * branch calls a function (cg_driver_ready) and then goes on, and it reloads
 * and stores back the stack parameters around a tail call (cuLaunchKernel
 * passes 5 on the stack). Written out, the stack and registers reach the
 * driver exactly as the caller left them: 8 instructions, endbr64 included
 * (bench/instr_budget.py). Elsewhere, the same in C.
 *
 * CG_FAST_PATH(cname, sname, ep, params, on): the exported wrapper sname,
 * when `on` (a constant) is true; when false, sname is the C body itself
 * (an alias of sname "_cg_other"). The C body is declared by
 * CG_OTHER_HEAD(cname, sname, params) and defined by the file. */
#ifndef CAPGUARD_FAST_PATH_H
#define CAPGUARD_FAST_PATH_H

#include "wrapper.h"

#define CG_OTHER_HEAD(cname, sname, params)                                                            \
  CUresult cname##_other(CG_PARAMS(params)) __asm__(sname "_cg_other") __attribute__((noinline, used)); \
  CUresult cname##_other(CG_PARAMS(params))

#if defined(__x86_64__)
#define CG_FAST_PATH(cname, sname, ep_, params, on)                                                    \
  static __attribute__((used)) void cname##_fast_holder(void) {                                       \
    __asm__ volatile(".globl " sname "\n\t.type " sname ", @function\n\t"                              \
                     ".if %c1\n" sname ":\n\t"                                                         \
                     ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64: an indirect call's target */       \
                     "movq cg_ep_real+%c0(%%rip), %%rax\n\t"                                           \
                     "testq %%rax, %%rax\n\t"                                                          \
                     "jz 1f\n\t"                                                                       \
                     "movq cg_activity(%%rip), %%r10\n\t"                                              \
                     "testq %%r10, %%r10\n\t"                                                          \
                     "jnz 1f\n\t"                                                                      \
                     "jmp *%%rax\n"                                                                    \
                     "1:\tjmp " sname "_cg_other\n\t"                                                  \
                     ".size " sname ", .-" sname "\n\t"                                                \
                     ".else\n\t"                                                                       \
                     ".set " sname ", " sname "_cg_other\n\t"                                          \
                     ".endif\n" ::"i"((ep_) * sizeof(void *)),                                         \
                     "i"((on) ? 1 : 0));                                                               \
  }
#else
#define CG_FAST_PATH(cname, sname, ep_, params, on)                                                    \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                             \
    CUresult (*real)(CG_PARAMS(params)) =                                                             \
        (CUresult(*)(CG_PARAMS(params)))__atomic_load_n(&cg_ep_real[ep_], __ATOMIC_ACQUIRE);          \
    if ((on) && __builtin_expect(real != NULL, 1) && __builtin_expect(cg_nothing_captures(), 1))      \
      return real(CG_ARGS(params));                                                                   \
    return cname##_other(CG_ARGS(params));                                                            \
  }
#endif

#endif
