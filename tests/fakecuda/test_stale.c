/* fakecuda: what the stale-pointer check reads of the driver, against the real driver's
 * documented behaviour: a captured launch keeps the values its parameters had at capture
 * (cuGraphKernelNodeGetParams hands them back, a later change to the caller's variables
 * does not reach them); cuFuncGetParamInfo (12.4+) says where each parameter lies, and
 * answers INVALID_VALUE past the last; cuPointerGetAttribute says which allocation holds
 * an address (its start, size and buffer id); an address freed comes back on the next
 * allocation of that size, with a buffer id it never had; freed memory has no attributes. */
#include "test_util.h"

#include <stdint.h>
#include <string.h>

static CUdeviceptr alloc(size_t n)
{
  CUdeviceptr p;
  CU_OK(cuMemAlloc(&p, n));
  return p;
}

/* Captures fake_scale(y + 16, 2.5f, 7) on a new stream; the graph's one kernel node. */
static CUgraph capture_scale(CUmodule m, CUdeviceptr y, CUgraphNode *node)
{
  CUfunction f;
  CU_OK(cuModuleGetFunction(&f, m, "fake_scale"));
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr arg0 = y + 16;
  float a = 2.5f;
  int n = 7;
  void *params[] = { &arg0, &a, &n };
  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
  CUgraph g;
  CU_OK(cuStreamEndCapture(s, &g));
  arg0 = 0;   /* the caller's variables change: the graph keeps what it captured */
  n = -1;
  size_t count = 1;
  CU_OK(cuGraphGetNodes(g, node, &count));
  ck_assert_uint_eq(count, 1);
  CU_OK(cuStreamDestroy(s));
  return g;
}

START_TEST(test_captured_parameters)
{
  CUmodule m = test_load_module("kernels_sm90.cubin");
  CUdeviceptr y = alloc(4096);
  CUgraphNode node;
  CUgraph g = capture_scale(m, y, &node);
  CUgraphNodeType type;
  CU_OK(cuGraphNodeGetType(node, &type));
  ck_assert_int_eq(type, CU_GRAPH_NODE_TYPE_KERNEL);
  CUDA_KERNEL_NODE_PARAMS p;
  CU_OK(cuGraphKernelNodeGetParams(node, &p));
  ck_assert_ptr_nonnull(p.kernelParams);
  CUdeviceptr got;
  memcpy(&got, p.kernelParams[0], sizeof got);
  ck_assert_uint_eq(got, y + 16);
  float a;
  memcpy(&a, p.kernelParams[1], sizeof a);
  ck_assert(a == 2.5f);
  int n;
  memcpy(&n, p.kernelParams[2], sizeof n);
  ck_assert_int_eq(n, 7);
  size_t off, size;
  if (test_driver_version() >= 12040) {
    static const size_t want[3][2] = { { 0, 8 }, { 8, 4 }, { 12, 4 } };
    for (size_t i = 0; i < 3; i++) {
      CU_OK(cuFuncGetParamInfo(p.func, i, &off, &size));
      ck_assert_uint_eq(off, want[i][0]);
      ck_assert_uint_eq(size, want[i][1]);
    }
    CU_EQ(cuFuncGetParamInfo(p.func, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
  } else {
    CU_EQ(cuFuncGetParamInfo(p.func, 0, &off, &size), CUDA_ERROR_NOT_SUPPORTED);   /* before 12.4 */
  }
  CU_OK(cuGraphDestroy(g));
  CU_OK(cuMemFree(y));
  CU_OK(cuModuleUnload(m));
}
END_TEST

START_TEST(test_pointer_attributes_and_reuse)
{
  CUdeviceptr y = alloc(4096);
  CUdeviceptr start;
  size_t size;
  unsigned long long id, id2;
  CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, y + 100));
  ck_assert_uint_eq(start, y);
  CU_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, y + 100));
  ck_assert_uint_eq(size, 4096);
  CU_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, y + 100));
  CU_OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, y));
  ck_assert_uint_eq(id, id2);
  CU_EQ(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, y + 4096), CUDA_ERROR_INVALID_VALUE);
  CU_OK(cuMemFree(y));
  CU_EQ(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, y), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr again = alloc(4096);
  ck_assert_uint_eq(again, y);   /* the address comes back */
  CU_OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, again));
  ck_assert_uint_ne(id2, id);   /* as another buffer */
  CU_OK(cuMemFree(again));
}
END_TEST

Suite *suite_stale(void)
{
  Suite *s = suite_create("stale pointers");
  TCase *tc = tcase_create("parameters and attributes");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_test(tc, test_captured_parameters);
  tcase_add_test(tc, test_pointer_attributes_and_reuse);
  suite_add_tcase(s, tc);
  return s;
}
