/* Helpers shared by the fakecuda tests (one executable, several suites). */
#ifndef FAKECUDA_TEST_UTIL_H
#define FAKECUDA_TEST_UTIL_H

#include <check.h>
#include <cuda.h>
#include <stddef.h>

#define CU_OK(call) \
  do { CUresult rc_ = (call); \
       ck_assert_msg(rc_ == CUDA_SUCCESS, "%s returned %d, want 0", #call, (int)rc_); } while (0)
#define CU_EQ(call, want) \
  do { CUresult rc_ = (call); \
       ck_assert_msg(rc_ == (want), "%s returned %d, want %d", #call, (int)rc_, (int)(want)); } while (0)

extern CUcontext test_ctx;
/* Checked fixture: cuInit, retain the primary context, make it current. */
void test_setup(void);
/* A file of tests/fakecuda/data, NUL-terminated, or a failed assertion. */
unsigned char *test_read_data(const char *name, size_t *len);
CUmodule test_load_module(const char *name);
/* Names of the kernel nodes of g in node order, joined by ','. */
void test_kernel_names(CUgraph g, char *out, size_t outlen);
/* How many nodes of g have this type. */
size_t test_count_nodes(CUgraph g, CUgraphNodeType type);
/* FAKECUDA_DRIVER_VERSION as the fake reads it (13000 when unset). */
int test_driver_version(void);

Suite *suite_ground_truth(void);
Suite *suite_procaddress(void);
Suite *suite_modules(void);
Suite *suite_trace(void);
Suite *suite_rules(void);
Suite *suite_third(void);
Suite *suite_ends(void);
Suite *suite_copies(void);
Suite *suite_stale(void);

#endif
