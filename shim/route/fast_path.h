/* The hottest wrappers' fast path (launches, copies, cuEventRecord,
 * cuStreamQuery): the driver's pointer and the capture activity loaded, and
 * one jump, to the driver or to everything else (sname "_cg_other", the
 * wrapper's C body: finding the driver, off mode, the decision). On x86-64
 * it is written out: gcc keeps a stack frame on a C fast path whose cold
 * branch calls a function (cg_driver_ready) and then goes on, and it reloads
 * and stores back the stack parameters around a tail call (cuLaunchKernel
 * passes 5 on the stack). Written out, the stack and registers reach the
 * driver exactly as the caller left them: 4 instructions, endbr64 included
 * (bench/instr_budget.py): the capture activity compared, and a jump
 * through the wrapper's own target, sname "_cg_target", which holds the C
 * body until the driver is found and the driver's function from then on
 * (driver.c, after cg_ep_real, through the section cg_fast_targets: a row
 * of the entry point's offset, the target's and the C body's place relative
 * to the row, which the loader need not relocate; a driver without the
 * function leaves the C body there, which says so). Elsewhere, the same in
 * C.
 *
 * CG_FAST_PATH(cname, sname, ep, params, kind): the exported wrapper sname.
 * kind (a constant): CG_FAST_PLAIN, the path above; CG_FAST_QUERY,
 * cuEventQuery's, which says it is in flight around the driver's call
 * (query_fence.h): 9 instructions, the thread's cg_query_seq incremented
 * in place before and after, each one instruction (a begin that parks the
 * thread's slot relies on it; a result of 0 says the thread has no slot yet
 * or its slot is parked: undone, and the C body claims one or unparks it,
 * with no instruction more on this path), the call through
 * cg_query_target (never NULL; the driver's function only while nothing
 * captures, so the activity is not tested), and call frame information, since the
 * driver's call is made from its frame; CG_FAST_NONE, sname is the C body
 * itself (an alias of sname "_cg_other"). The C body is declared by
 * CG_OTHER_HEAD(cname, sname, params) and defined by the file. */
#ifndef CAPGUARD_FAST_PATH_H
#define CAPGUARD_FAST_PATH_H

#include "query_fence.h"
#include "wrapper.h"

enum { CG_FAST_NONE, CG_FAST_PLAIN, CG_FAST_QUERY, CG_FAST_BREAKER, CG_FAST_BREAKER_BLOCKS };
#if defined(__x86_64__)
/* What cuEventQuery's fast path calls: the driver's function while nothing
 * captures, else the divert (query_fence.h, "the diverted target"). */
extern void *cg_query_target;
extern char cg_query_divert_code[] __asm__("cuEventQuery_cg_divert");
#endif

#define CG_OTHER_HEAD(cname, sname, params)                                                            \
  CUresult cname##_other(CG_PARAMS(params)) __asm__(sname "_cg_other") __attribute__((noinline, used)); \
  CUresult cname##_other(CG_PARAMS(params))

#if defined(__x86_64__)
#define CG_FAST_PATH(cname, sname, ep_, params, kind)                                                  \
  static __attribute__((used)) void cname##_fast_holder(void) {                                       \
    __asm__ volatile(".globl " sname "\n\t.type " sname ", @function\n\t"                              \
                     ".if %c1 == 1\n" sname ":\n\t"                                                    \
                     ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64: an indirect call's target */       \
                     "cmpq $0, cg_activity(%%rip)\n\t"                                                \
                     "jne 1f\n\t"                                                                      \
                     "jmp *" sname "_cg_target(%%rip)\n"                                               \
                     "1:\tjmp " sname "_cg_other\n\t"                                                  \
                     ".size " sname ", .-" sname "\n\t"                                                \
                     ".pushsection .data.rel.local.cg_fast,\"aw\"\n\t.balign 8\n"                      \
                     sname "_cg_target:\n\t.quad " sname "_cg_other\n\t"                               \
                     ".popsection\n\t"                                                                 \
                     ".pushsection cg_fast_targets,\"a\"\n\t.balign 4\n\t"                            \
                     ".long %c0, " sname "_cg_target - ., " sname "_cg_other - .\n\t"                           \
                     ".popsection\n\t"                                                                 \
                     ".elseif %c1 == 2\n\t" /* CG_QUERY_FAST_PATH, at file level */                     \
                     ".elseif %c1 == 3\n\t" /* CG_BREAKER_FAST_PATH's, at file level */              \
                     ".set " sname ", " sname "_cg_fast\n\t"                                          \
                     ".elseif %c1 == 4\n\t"                                                           \
                     ".set " sname ", " sname "_cg_fastb\n\t"                                         \
                     ".else\n\t"                                                                       \
                     ".set " sname ", " sname "_cg_other\n\t"                                          \
                     ".endif\n" ::"i"((ep_) * sizeof(void *)),                                         \
                     "i"((int)(kind)));                                                                \
  }
/* cuEventQuery's (CG_FAST_QUERY), at file level (CG_QUERY_FAST_PATH(sname)
 * once in the file): its call frame information cannot sit inside a C
 * function's. The capture activity is not tested on this path: the call
 * goes through cg_query_target, which is the driver's function only while
 * nothing captures (query_fence.h, "the diverted target"), and otherwise
 * sname "_cg_divert": with the capture activity still zero there, it goes
 * on to cg_query_restore (C), which puts the driver's function back and
 * makes the call, still in flight; else it leaves the fence, drops the
 * fast path's frame (its return address and saved %r11) and jumps to the
 * C body, as if the caller had called it. 9 instructions with the driver
 * as the target. */
#define CG_QUERY_FAST_PATH(sname)                                                                    \
  __asm__(".text\n\t.globl " sname "\n\t.type " sname ", @function\n" sname ":\n\t"                \
          ".cfi_startproc\n\t"                                                                     \
          ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64 */                                          \
          "movq cg_query_seq@gottpoff(%rip), %r11\n\t"                                             \
          "addl $1, %fs:(%r11)\n\t" /* in flight (odd) */                                          \
          "jz 2f\n\t"                 /* it was CG_QUERY_UNCLAIMED: no slot, or parked */          \
          "pushq %r11\n\t"                                                                         \
          ".cfi_adjust_cfa_offset 8\n\t"                                                            \
          "call *cg_query_target(%rip)\n\t"                                                        \
          "popq %r11\n\t"                                                                          \
          ".cfi_adjust_cfa_offset -8\n\t"                                                           \
          "addl $1, %fs:(%r11)\n\t" /* left (even) */                                              \
          "ret\n"                                                                                   \
          "2:\tsubl $1, %fs:(%r11)\n\t"                                                            \
          "jmp " sname "_cg_other\n\t"                                                              \
          ".cfi_endproc\n\t"                                                                       \
          ".size " sname ", .-" sname "\n\t"                                                        \
          ".globl " sname "_cg_divert\n\t.hidden " sname "_cg_divert\n\t"                         \
          ".type " sname "_cg_divert, @function\n" sname "_cg_divert:\n\t"                         \
          ".cfi_startproc\n\t"                                                                     \
          ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64: called through the target */             \
          "cmpq $0, cg_activity(%rip)\n\t"                                                         \
          "jne 1f\n\t"                                                                              \
          "jmp cg_query_restore\n"                                                                  \
          "1:\tmovq cg_query_seq@gottpoff(%rip), %r11\n\t"                                         \
          "addl $1, %fs:(%r11)\n\t" /* left (even) */                                              \
          "addq $16, %rsp\n\t"        /* the caller's return address on top again */               \
          "jmp " sname "_cg_other\n\t"                                                              \
          ".cfi_endproc\n\t"                                                                       \
          ".size " sname "_cg_divert, .-" sname "_cg_divert\n")
/* A breaker's (CG_FAST_BREAKER: frees, allocations and the like;
 * CG_FAST_BREAKER_BLOCKS: the synchronizes; breaker_wrappers.c says which
 * rows): nothing capturing, its call made inside the breakers' fence
 * (query_fence.h: the thread's cg_breaker_seq odd around the call, as
 * cg_breaker_enter and cg_breaker_leave) and its answer checked for a refusal
 * before it leaves (sname "_cg_refused", C), through the row's target: the
 * driver's function, or the row's divert (sname "_cg_bdivert": it leaves
 * the fence, drops the fast path's frame and jumps to the C body) where
 * the driver lacks the function or while the row's C body has work of its
 * own (the stale check on frees: driver/breaker_targets.c). No slot yet:
 * the C body, which claims one only once it has the driver's pointer, and
 * the targets are set before the driver's pointers are published; so the
 * words start at zero, with nothing for the loader to relocate.
 * 13 instructions (15 a synchronize, which looks at the hang watch); 17
 * and 19 while the fence's word sat in a slot reached through a pointer
 * and the check compared twice; the C body, with its frame and saved
 * registers, was 34 to 41.
 *
 * With the hang watch on, a synchronize is in its thread's hang slot while
 * it lasts: the stores of cg_hang_call_enter and cg_hang_call_leave
 * (hang_slots.h, whose layout breaker_wrappers.c asserts), written out here
 * too, so that the watch adds about as much to this path as it added to the
 * C body's (no slot yet: the C body, which claims one). The handle is the
 * first argument, masked by sname "_cg_handle_mask" (0 for
 * cuCtxSynchronize, which has none).
 *
 * CG_BREAKER_HOLDER's flags (CG_BT_*): without CG_BT_FAST the row's word
 * is never the driver's and its exported entry point is its C body, the
 * lines of CG_BREAKER_FAST_PATH unused. */
#define CG_BREAKER_HOLDER(cname, sname, ep_, flags, handle_mask)                                     \
  static __attribute__((used)) void cname##_breaker_holder(void) {                                    \
    __asm__ volatile(".if %c1 & 1\n\t"                                                              \
                     ".pushsection .bss.cg_btarget,\"aw\",@nobits\n\t.balign 8\n"              \
                     sname "_cg_btarget:\n\t.zero 8\n\t" /* set before any thread has a slot */   \
                     ".popsection\n\t"                                                               \
                     ".pushsection cg_breaker_targets,\"a\"\n\t.balign 4\n\t"                       \
                     ".long %c0, " sname "_cg_btarget - ., " sname "_cg_bdivert - ., %c1\n\t"          \
                     ".popsection\n\t"                                                               \
                     ".else\n\t"                                                                     \
                     ".set " sname "_cg_btarget, cg_breaker_no_target\n\t"                            \
                     ".endif\n\t"                                                                    \
                     ".set " sname "_cg_handle_mask, %c2\n" ::"i"((ep_) * sizeof(void *)),            \
                     "i"((int)(flags)), "i"((int)(handle_mask)));                                     \
  }
/* The fence entered: the thread's word incremented in place (odd: in
 * flight); a result of 0 says the thread has no slot yet (the word was
 * CG_QUERY_UNCLAIMED): undone at 2, and the C body claims one. %r11 holds
 * the word's offset from the thread pointer. */
#define CG_BREAKER_ENTER_                                                                            \
  "movq cg_breaker_seq@gottpoff(%rip), %r11\n\t"                                                   \
  "addl $1, %fs:(%r11)\n\t" /* in flight (odd) */                                                  \
  "jz 2f\n\t"
/* The call, the refusal check and the fence left: the lines both entries
 * share. One compare for the check: 900 and 907 (a refusal) and the rare
 * answers above them go to sname "_cg_refused", which tells them apart. */
#define CG_BREAKER_CALL_(sname)                                                                      \
  "pushq %r11\n\t" /* kept for the leave, and the stack aligned for the call */                    \
  ".cfi_adjust_cfa_offset 8\n\t"                                                                    \
  "call *" sname "_cg_btarget(%rip)\n"                                                               \
  "5:\tcmpl $899, %eax\n\t"                                                                        \
  "ja 6f\n\t"                                                                                       \
  "popq %r11\n\t"                                                                                  \
  ".cfi_adjust_cfa_offset -8\n\t"                                                                   \
  "addl $1, %fs:(%r11)\n\t" /* left (even) */                                                      \
  "ret\n\t"                                                                                        \
  ".cfi_adjust_cfa_offset 8\n"                                                                       \
  "6:\tmovl %eax, %edi\n\t"                                                                        \
  "call " sname "_cg_refused\n\t" /* attributed before the call leaves the fence */               \
  "popq %r11\n\t"                                                                                  \
  ".cfi_adjust_cfa_offset -8\n\t"                                                                   \
  "addl $1, %fs:(%r11)\n\t"                                                                        \
  "ret\n"
/* 2: no slot yet, the increment undone; 3: the C body (something
 * captures, or from 2). */
#define CG_BREAKER_UNCLAIMED_(sname)                                                                 \
  "2:\tsubl $1, %fs:(%r11)\n"                                                                      \
  "3:\tjmp " sname "_cg_other\n\t"
#define CG_BREAKER_FAST_PATH(sname)                                                                  \
  __asm__(".text\n\t.globl " sname "_cg_fast\n\t.hidden " sname "_cg_fast\n\t"                     \
          ".type " sname "_cg_fast, @function\n" sname "_cg_fast:\n\t"                              \
          ".cfi_startproc\n\t"                                                                     \
          ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64 */                                          \
          "cmpq $0, cg_activity(%rip)\n\t"                                                         \
          "jne 3f\n\t" CG_BREAKER_ENTER_ CG_BREAKER_CALL_(sname) CG_BREAKER_UNCLAIMED_(sname)        \
          ".cfi_endproc\n\t"                                                                       \
          ".size " sname "_cg_fast, .-" sname "_cg_fast\n\t"                                        \
          ".globl " sname "_cg_fastb\n\t.hidden " sname "_cg_fastb\n\t"                           \
          ".type " sname "_cg_fastb, @function\n" sname "_cg_fastb:\n\t"                           \
          ".cfi_startproc\n\t"                                                                     \
          ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64 */                                          \
          "cmpq $0, cg_activity(%rip)\n\t"                                                         \
          "jne 3f\n\t" CG_BREAKER_ENTER_                                                              \
          "cmpl $0, cg_hang_s(%rip)\n\t"                                                           \
          "jne 4f\n\t" CG_BREAKER_CALL_(sname)                                                       \
          "4:\tmovq cg_hang_mine@gottpoff(%rip), %rax\n\t"                                          \
          "movq %fs:(%rax), %rax\n\t"                                                               \
          "testq %rax, %rax\n\t"                                                                   \
          "jz 2f\n\t" /* no hang slot yet: the C body, which claims one */                        \
          "leaq " sname "_cg_name(%rip), %rcx\n\t"                                                  \
          "movq %rcx, 8(%rax)\n\t" /* call */                                                      \
          "movq %rdi, 24(%rax)\n\t" /* handle */                                                   \
          "andq $" sname "_cg_handle_mask, 24(%rax)\n\t"                                            \
          "movq (%rsp), %rcx\n\t"                                                                  \
          "movq %rcx, 32(%rax)\n\t" /* caller: the return address */                               \
          "movq %rsp, 40(%rax)\n\t" /* caller_slot: where it is */                                 \
          "addq $1, 48(%rax)\n\t"   /* count: the owner's alone */                                 \
          "movq 48(%rax), %rcx\n\t"                                                                \
          "movq %rcx, 16(%rax)\n\t" /* call_seq, the last store (a release on x86-64) */            \
          "pushq %r11\n\t"                                                                         \
          ".cfi_adjust_cfa_offset 8\n\t"                                                            \
          "call *" sname "_cg_btarget(%rip)\n\t"                                                     \
          "movq cg_hang_mine@gottpoff(%rip), %rcx\n\t" /* the slot, the thread's own still */      \
          "movq %fs:(%rcx), %rcx\n\t"                                                               \
          "movq $0, 16(%rcx)\n\t" /* call_seq: in none */                                          \
          "jmp 5b\n\t"                                                                             \
          ".cfi_adjust_cfa_offset -8\n" CG_BREAKER_UNCLAIMED_(sname)                                \
          ".cfi_endproc\n\t"                                                                       \
          ".size " sname "_cg_fastb, .-" sname "_cg_fastb\n\t"                                      \
          ".globl " sname "_cg_bdivert\n\t.hidden " sname "_cg_bdivert\n\t"                       \
          ".type " sname "_cg_bdivert, @function\n" sname "_cg_bdivert:\n\t"                       \
          ".cfi_startproc\n\t"                                                                     \
          ".byte 0xf3, 0x0f, 0x1e, 0xfa\n\t" /* endbr64: called through the target */             \
          "movq cg_breaker_seq@gottpoff(%rip), %r11\n\t"                                           \
          "addl $1, %fs:(%r11)\n\t" /* left (even) */                                              \
          "addq $16, %rsp\n\t"        /* the caller's return address on top again */               \
          "jmp " sname "_cg_other\n\t"                                                              \
          ".cfi_endproc\n\t"                                                                       \
          ".size " sname "_cg_bdivert, .-" sname "_cg_bdivert\n\t"                                  \
          ".pushsection .rodata.str1.1,\"aMS\",@progbits,1\n" sname "_cg_name:\n\t"                \
          ".asciz \"" sname "\"\n\t.popsection\n")
#else
#define CG_QUERY_FAST_PATH(sname)
#define CG_BREAKER_HOLDER(cname, sname, ep_, flags, handle_mask)
#define CG_BREAKER_FAST_PATH(sname)
#define CG_FAST_PATH(cname, sname, ep_, params, kind)                                                  \
  CG_WRAPPER_HEAD(cname, sname, params) {                                                             \
    CUresult (*real)(CG_PARAMS(params)) =                                                             \
        (CUresult(*)(CG_PARAMS(params)))__atomic_load_n(&cg_ep_real[ep_], __ATOMIC_ACQUIRE);          \
    if ((kind) == CG_FAST_PLAIN && __builtin_expect(real != NULL, 1) &&                               \
        __builtin_expect(cg_nothing_captures(), 1))                                                   \
      return real(CG_ARGS(params));                                                                   \
    return cname##_other(CG_ARGS(params));                                                            \
  }
#endif

#endif
