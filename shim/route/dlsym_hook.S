/* capguard's dlsym.
 *
 * Why assembly: glibc's dlsym finds the caller's object from its own return
 * address (RTLD_NEXT means "after the object that called dlsym"). A C
 * wrapper that called glibc's dlsym would make every RTLD_NEXT lookup
 * relative to libcapguard, and another preloaded interposer doing the usual
 * dlsym(RTLD_NEXT, "malloc") could then get its own symbol back and recurse
 * forever. So names that cannot be driver entry points (not starting "cu")
 * are passed to glibc with a tail jump, which leaves the caller's return
 * address in place. For "cu..." names, cg_dlsym_driver_symbol (C) decides
 * (it gets the caller's return address too, to fail as glibc would fail for
 * that caller):
 *   returns 0            -> tail-jump to glibc's dlsym as if capguard were absent;
 *   returns 1            -> answer NULL (the symbol does not exist without capguard);
 *   returns any pointer  -> answer it (capguard's wrapper, or what glibc found).
 * glibc's dlsym itself is found at the first call that passes one on, not at
 * start-up (a dlvsym: 2.8k instructions of every process's start-up), and
 * that call is then passed on with the same tail jump. */
#if defined(__x86_64__)
/* A call that keeps dlsym's two arguments (%rdi, %rsi) for after it, the
 * stack 16-byte aligned for the callee. */
        .macro  call_keeping_args fn
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    \fn
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        .endm

        .text
        .globl  dlsym
        .type   dlsym, @function
        .hidden cg_dlsym_driver_symbol
        .hidden cg_real_dlsym_resolve
        .hidden cg_real_dlsym
dlsym:
        .cfi_startproc
#if defined(__CET__)
        endbr64
#endif
        testq   %rsi, %rsi
        jz      .Lpass
        cmpb    $0x63, (%rsi)           /* 'c' */
        jne     .Lpass
        cmpb    $0x75, 1(%rsi)          /* 'u' */
        jne     .Lpass
        movq    (%rsp), %rdx            /* third argument: the caller's return address */
        call_keeping_args cg_dlsym_driver_symbol
        testq   %rax, %rax
        jz      .Lpass
        cmpq    $1, %rax
        jne     .Lanswer
        xorl    %eax, %eax
.Lanswer:
        ret
.Lpass:
        movq    cg_real_dlsym(%rip), %rax
        testq   %rax, %rax
        jz      .Lfind
        jmp     *%rax
.Lfind:                                 /* glibc's dlsym, found at the first call that passes one on */
        call_keeping_args cg_real_dlsym_resolve
        movq    cg_real_dlsym(%rip), %rax
        testq   %rax, %rax
        jz      .Lnone
        jmp     *%rax                   /* the caller's return address still in place */
.Lnone:
        xorl    %eax, %eax
        ret
        .cfi_endproc
        .size   dlsym, .-dlsym

#elif defined(__aarch64__)
/* A call that keeps dlsym's two arguments (x0, x1) for after it, in a
 * frame of its own (the link register saved); answer, when given, is the
 * register that keeps the callee's answer, which x0 no longer holds. */
        .macro  call_keeping_args fn, answer
        stp     x29, x30, [sp, #-32]!
        .cfi_def_cfa_offset 32
        .cfi_offset 29, -32
        .cfi_offset 30, -24
        mov     x29, sp
        stp     x0, x1, [sp, #16]
        bl      \fn
        .ifnb   \answer
        mov     \answer, x0
        .endif
        ldp     x0, x1, [sp, #16]
        ldp     x29, x30, [sp], #32
        .cfi_def_cfa_offset 0
        .cfi_restore 29
        .cfi_restore 30
        .endm

        .text
        .globl  dlsym
        .type   dlsym, %function
        .hidden cg_dlsym_driver_symbol
        .hidden cg_real_dlsym_resolve
        .hidden cg_real_dlsym
dlsym:
        .cfi_startproc
        cbz     x1, .Lpass
        ldrb    w2, [x1]
        cmp     w2, #0x63
        b.ne    .Lpass
        ldrb    w2, [x1, #1]
        cmp     w2, #0x75
        b.ne    .Lpass
        mov     x2, x30                 /* third argument: the caller's return address */
        call_keeping_args cg_dlsym_driver_symbol, x2
        cbz     x2, .Lpass
        cmp     x2, #1
        b.ne    .Lanswer
        mov     x2, #0
.Lanswer:
        mov     x0, x2
        ret
.Lpass:
        adrp    x2, cg_real_dlsym
        ldr     x2, [x2, :lo12:cg_real_dlsym]
        cbz     x2, .Lfind
        br      x2
.Lfind:                                 /* glibc's dlsym, found at the first call that passes one on */
        call_keeping_args cg_real_dlsym_resolve
        adrp    x2, cg_real_dlsym
        ldr     x2, [x2, :lo12:cg_real_dlsym]
        cbz     x2, .Lnone
        br      x2                      /* the caller's return address still in x30 */
.Lnone:
        mov     x0, #0
        ret
        .cfi_endproc
        .size   dlsym, .-dlsym
#else
#error "capguard's dlsym hook is written for x86_64 and aarch64"
#endif
        .section .note.GNU-stack,"",%progbits
