/* A kernel's name as the command shows it to a person (text, HTML, run's
 * summary, prime list): C++ names demangled and shortened
 * (capguard/kernel_name.h: "at::native::(anonymous namespace)::CatArrayBatchedCopy<...>"),
 * others as they are. JSON keeps the exact symbol. */
#ifndef CAPGUARD_KERNEL_DISPLAY_H
#define CAPGUARD_KERNEL_DISPLAY_H

#include <stddef.h>

/* Writes name's display form into buf[0, cap) and returns buf. */
const char *cg_kernel_display(const char *name, char *buf, size_t cap);

/* Room enough for any display form a sentence or table holds (longer ones are cut). */
#define CG_KERNEL_DISPLAY_MAX 512

/* For lists, where a template's instances read alike: name's display form
 * in disp, or NULL when it is prev's (the name listed just before, which
 * then names both); prev (CG_KERNEL_DISPLAY_MAX, "" at first) follows. */
const char *cg_kernel_display_new(const char *name, char *disp, char *prev);
#endif
