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
  CUpointer_attribute what[3] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                  CU_POINTER_ATTRIBUTE_BUFFER_ID };
  CUdeviceptr s3 = 1;
  size_t z3 = 1;
  unsigned long long i3 = 1;
  void *into[3] = { &s3, &z3, &i3 };
  CU_OK(cuPointerGetAttributes(3, what, into, y));   /* freed: zeros, and success, as documented */
  ck_assert(s3 == 0 && z3 == 0 && i3 == 0);
  CUdeviceptr again = alloc(4096);
  ck_assert_uint_eq(again, y);   /* the address comes back */
  CU_OK(cuPointerGetAttributes(3, what, into, again + 8));   /* all three in one call */
  ck_assert(s3 == again && z3 == 4096 && i3 != id && i3 != 0);
  CU_OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, again));
  ck_assert_uint_ne(id2, id);   /* as another buffer */
  CU_OK(cuMemFree(again));
}
END_TEST

/* The virtual memory API as expandable segments use it: a range reserved, pieces mapped
 * to physical allocations; an address in a mapped piece answers with the whole range
 * (measured), an unmapped one with nothing, except to the plural call: the range and
 * buffer id 0 (measured); a second physical allocation mapped where
 * the first was is another handle. */
START_TEST(test_vmm_pieces)
{
  const size_t g = 2u << 20;
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  size_t gran = 0;
  CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  ck_assert_uint_eq(gran, g);
  CUdeviceptr base;
  CU_OK(cuMemAddressReserve(&base, 8 * g, 0, 0, 0));
  CUmemGenericAllocationHandle a, b, c;
  CU_OK(cuMemCreate(&a, g, &prop, 0));
  CU_OK(cuMemCreate(&b, 2 * g, &prop, 0));
  CU_OK(cuMemMap(base, g, 0, a, 0));
  CU_OK(cuMemMap(base + g, 2 * g, 0, b, 0));
  CU_EQ(cuMemMap(base + 2 * g, g, 0, a, 0), CUDA_ERROR_INVALID_VALUE);   /* already mapped there */
  CUmemAccessDesc acc = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
  CU_OK(cuMemSetAccess(base, 3 * g, &acc, 1));
  CUdeviceptr start;
  size_t size;
  unsigned long long id;
  CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, base + g + 100));
  CU_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, base + g + 100));
  ck_assert_uint_eq(start, base);   /* the reserved range, not the piece */
  ck_assert_uint_eq(size, 8 * g);
  CU_EQ(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base + 4 * g), CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute what[3] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                  CU_POINTER_ATTRIBUTE_BUFFER_ID };
  id = 1;
  void *into[3] = { &start, &size, &id };
  CU_OK(cuPointerGetAttributes(3, what, into, base + 4 * g));   /* measured: unmapped, yet the range */
  ck_assert(start == base && size == 8 * g && id == 0);
  CU_EQ(cuMemUnmap(base + g, g), CUDA_ERROR_INVALID_VALUE);   /* half of a mapping */
  CU_OK(cuMemRelease(a));   /* released while mapped: its memory stays */
  CU_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base));
  CU_OK(cuMemUnmap(base, 3 * g));   /* both mappings at once */
  CU_EQ(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base), CUDA_ERROR_INVALID_VALUE);
  CU_EQ(cuMemMap(base, g, 0, a, 0), CUDA_ERROR_INVALID_VALUE);   /* released and unmapped: gone */
  CU_OK(cuMemCreate(&c, g, &prop, 0));
  ck_assert_uint_ne(c, a);   /* a second physical allocation, at the same address next */
  CU_OK(cuMemMap(base, g, 0, c, 0));
  CU_OK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base));
  CU_EQ(cuMemAddressFree(base, 8 * g), CUDA_ERROR_INVALID_VALUE);   /* still mapped in it */
  CU_OK(cuMemUnmap(base, g));
  CU_OK(cuMemRelease(b));
  CU_OK(cuMemRelease(c));
  CU_OK(cuMemAddressFree(base, 8 * g));
}
END_TEST

/* A launch whose arguments are one buffer (`extra`, as cuBLAS launches): the node keeps a
 * copy of the buffer and hands it back as `extra`, with no kernelParams. */
START_TEST(test_extra_buffer_launch)
{
  CUmodule m = test_load_module("kernels_sm90.cubin");
  CUfunction f;
  CU_OK(cuModuleGetFunction(&f, m, "fake_scale"));
  CUdeviceptr y = alloc(4096);
  unsigned char buf[16];
  CUdeviceptr arg0 = y + 8;
  float a = 2.5f;
  int n = 7;
  memcpy(buf, &arg0, 8);
  memcpy(buf + 8, &a, 4);
  memcpy(buf + 12, &n, 4);
  size_t len = sizeof buf;
  void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len, CU_LAUNCH_PARAM_END };
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, extra));
  CUgraph g;
  CU_OK(cuStreamEndCapture(s, &g));
  memset(buf, 0, sizeof buf);   /* the caller's buffer changes: the node keeps its copy */
  CUgraphNode node;
  size_t count = 1;
  CU_OK(cuGraphGetNodes(g, &node, &count));
  CUDA_KERNEL_NODE_PARAMS p;
  CU_OK(cuGraphKernelNodeGetParams(node, &p));
  ck_assert_ptr_null(p.kernelParams);
  ck_assert_ptr_nonnull(p.extra);
  ck_assert_ptr_eq(p.extra[0], CU_LAUNCH_PARAM_BUFFER_POINTER);
  ck_assert_ptr_eq(p.extra[2], CU_LAUNCH_PARAM_BUFFER_SIZE);
  ck_assert_uint_eq(*(size_t *)p.extra[3], 16);
  CUdeviceptr got;
  memcpy(&got, p.extra[1], 8);
  ck_assert_uint_eq(got, y + 8);
  CU_OK(cuGraphDestroy(g));
  CU_OK(cuStreamDestroy(s));
  CU_OK(cuMemFree(y));
  CU_OK(cuModuleUnload(m));
}
END_TEST

Suite *suite_stale(void)
{
  Suite *s = suite_create("stale pointers");
  TCase *tc = tcase_create("parameters and attributes");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_test(tc, test_captured_parameters);
  tcase_add_test(tc, test_pointer_attributes_and_reuse);
  tcase_add_test(tc, test_vmm_pieces);
  tcase_add_test(tc, test_extra_buffer_launch);
  suite_add_tcase(s, tc);
  return s;
}
