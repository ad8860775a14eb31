/* The calling thread's kernel id. The system call, not glibc's gettid():
 * that wrapper is of glibc 2.30, one more symbol version the loader checks
 * in every process at start-up (about 120 instructions), for a call the
 * shim makes rarely (the model's first look at a thread, the driver's
 * resolution). */
#ifndef CAPGUARD_THREAD_ID_H
#define CAPGUARD_THREAD_ID_H

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline pid_t cg_thread_id(void) { return (pid_t)syscall(SYS_gettid); }

#endif
