/* "Where is this thread" in one short line, over the shim's stack capture.
 * Test-only: the shim itself never asks it (it symbolizes saved frames with
 * cg_native_where_frames), so it lives here, not in libcapguard.so. */
#ifndef CAPGUARD_TEST_STACK_WHERE_H
#define CAPGUARD_TEST_STACK_WHERE_H

#include <stddef.h>

/* Innermost Python frame ("vllm/worker/model_runner.py:1234 in capture_model")
 * else the first native frame outside capguard, libcuda and libcudart.
 * Returns length. */
size_t cg_stack_where(char *buf, size_t cap);
/* The first native frame of the calling thread outside the object holding
 * the stack code, libcuda and libcudart, as "libfoo.so(func+0x1a)" without
 * the address; "" and 0 when there is none. Returns length. */
size_t cg_native_where(char *buf, size_t cap);

#endif
