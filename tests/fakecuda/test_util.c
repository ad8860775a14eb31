/* Helpers shared by the fakecuda tests. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CUcontext test_ctx;

void test_setup(void)
{
  CUdevice dev;
  CU_OK(cuInit(0));
  CU_OK(cuDeviceGet(&dev, 0));
  CU_OK(cuDevicePrimaryCtxRetain(&test_ctx, dev));
  CU_OK(cuCtxSetCurrent(test_ctx));
}

unsigned char *test_read_data(const char *name, size_t *len)
{
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", FAKECUDA_TEST_DATA, name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open test data %s", path);
  ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  ck_assert_msg(n > 0 && n < (1 << 24), "odd size %ld of %s", n, path);
  rewind(f);
  unsigned char *buf = calloc(1, (size_t)n + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  if (len != NULL)
    *len = (size_t)n;
  return buf;
}

CUmodule test_load_module(const char *name)
{
  unsigned char *img = test_read_data(name, NULL);
  CUmodule m = NULL;
  CU_OK(cuModuleLoadData(&m, img));
  free(img);
  return m;
}

void test_kernel_names(CUgraph g, char *out, size_t outlen)
{
  size_t n = 0;
  CU_OK(cuGraphGetNodes(g, NULL, &n));
  CUgraphNode nodes[64];
  ck_assert_uint_le(n, 64);
  CU_OK(cuGraphGetNodes(g, nodes, &n));
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType type;
    CU_OK(cuGraphNodeGetType(nodes[i], &type));
    if (type != CU_GRAPH_NODE_TYPE_KERNEL)
      continue;
    CUDA_KERNEL_NODE_PARAMS p;
    CU_OK(cuGraphKernelNodeGetParams_v2(nodes[i], &p));
    const char *name = NULL;
    CU_OK(cuFuncGetName(&name, p.func));
    size_t used = strlen(out);
    snprintf(out + used, outlen - used, "%s%s", used ? "," : "", name);
  }
}

size_t test_count_nodes(CUgraph g, CUgraphNodeType type)
{
  size_t n = 0, count = 0;
  CU_OK(cuGraphGetNodes(g, NULL, &n));
  CUgraphNode nodes[64];
  ck_assert_uint_le(n, 64);
  CU_OK(cuGraphGetNodes(g, nodes, &n));
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType t;
    CU_OK(cuGraphNodeGetType(nodes[i], &t));
    count += t == type;
  }
  return count;
}

int test_driver_version(void)
{
  const char *s = getenv("FAKECUDA_DRIVER_VERSION");
  return (s != NULL && *s != '\0') ? atoi(s) : 13000;
}
