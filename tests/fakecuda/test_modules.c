/* fakecuda: module images (recognition, measured size, target check, kernel lookup),
 * double unloads, and the captured graph's kernel listing. */
#include "test_util.h"

#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Places len bytes so that they end exactly where an inaccessible page begins: a fake
 * that measured the image too long, or read a PTX past its NUL, crashes the test. */
struct guarded { unsigned char *map; size_t maplen; unsigned char *image; };
static struct guarded guard_copy(const unsigned char *bytes, size_t len)
{
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t data_pages = (len + page - 1) / page;
  struct guarded g;
  g.maplen = (data_pages + 1) * page;
  g.map = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert(g.map != MAP_FAILED);
  ck_assert_int_eq(mprotect(g.map + data_pages * page, page, PROT_NONE), 0);
  g.image = g.map + data_pages * page - len;
  memcpy(g.image, bytes, len);
  return g;
}

static void guard_free(struct guarded *g) { munmap(g->map, g->maplen); }

static void expect_kernels(CUmodule m)
{
  CUfunction f;
  const char *name;
  CU_OK(cuModuleGetFunction(&f, m, "fake_add_one"));
  CU_OK(cuFuncGetName(&name, f));
  ck_assert_str_eq(name, "fake_add_one");
  CU_OK(cuModuleGetFunction(&f, m, "fake_scale"));
  CU_EQ(cuModuleGetFunction(&f, m, "fake_scal"), CUDA_ERROR_NOT_FOUND);
  CU_EQ(cuModuleGetFunction(&f, m, "ake_scale"), CUDA_ERROR_NOT_FOUND);
  CU_EQ(cuModuleGetFunction(&f, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
}

/* Each image kind loads from a buffer that ends at a guard page (cubin and fatbin:
 * the file as nvcc wrote it; PTX: the text and its NUL). */
START_TEST(test_image_exact_size)
{
  static const char *files[] = { "kernels_sm90.cubin", "kernels_sm90.fatbin", "kernels.ptx" };
  size_t len;
  unsigned char *bytes = test_read_data(files[_i], &len);
  int text = strstr(files[_i], ".ptx") != NULL;
  struct guarded g = guard_copy(bytes, len + (text ? 1 : 0));
  CUmodule m;
  CU_OK(cuModuleLoadData(&m, g.image));
  guard_free(&g);      /* the fake must have copied the image */
  expect_kernels(m);
  CU_OK(cuModuleUnload(m));
  free(bytes);
}
END_TEST

START_TEST(test_image_fatbin_wrapper)
{
  size_t len;
  unsigned char *fatbin = test_read_data("kernels_sm90.fatbin", &len);
  struct { int magic; int version; const void *data; void *filename; } wrapper =
    { 0x466243B1, 1, fatbin, NULL };
  CUmodule m;
  CU_OK(cuModuleLoadFatBinary(&m, &wrapper));
  expect_kernels(m);
  CU_OK(cuModuleUnload(m));
  wrapper.data = "not a fatbin";
  CU_EQ(cuModuleLoadFatBinary(&m, &wrapper), CUDA_ERROR_INVALID_IMAGE);
  free(fatbin);
}
END_TEST

START_TEST(test_image_ptx_rules)
{
  static const char ptx[] = "\n\t  .version 9.0\n.target sm_90\n.visible .entry  spaced_kernel (\n)\n"
                            "// .entry commented_not_really\n.func not_an_entry(\n)\n";
  CUmodule m;
  CUfunction f;
  CU_OK(cuModuleLoadData(&m, ptx));
  CU_OK(cuModuleGetFunction(&f, m, "spaced_kernel"));
  CU_EQ(cuModuleGetFunction(&f, m, "not_an_entry"), CUDA_ERROR_NOT_FOUND);
  CU_EQ(cuModuleGetFunction(&f, m, "spaced"), CUDA_ERROR_NOT_FOUND);
  CU_OK(cuModuleUnload(m));
  CU_OK(cuModuleLoadData(&m, "// only a comment"));
  CU_OK(cuModuleUnload(m));
}
END_TEST

START_TEST(test_image_rejections)
{
  size_t len;
  unsigned char *cubin = test_read_data("kernels_sm90.cubin", &len);
  CUmodule m = NULL;
  CU_EQ(cuModuleLoadData(&m, "hello, not an image"), CUDA_ERROR_INVALID_IMAGE);
  CU_EQ(cuModuleLoadData(&m, ""), CUDA_ERROR_INVALID_IMAGE);
  CU_EQ(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
  /* An ELF for another machine (x86-64). */
  unsigned char *bad = malloc(len);
  ck_assert_ptr_nonnull(bad);
  memcpy(bad, cubin, len);
  bad[18] = 62; bad[19] = 0;
  CU_EQ(cuModuleLoadData(&m, bad), CUDA_ERROR_INVALID_IMAGE);
  /* A section table claimed 2^40 bytes in: garbage, refused without reading it. */
  memcpy(bad, cubin, len);
  uint64_t far = (uint64_t)1 << 40;
  memcpy(bad + 0x28, &far, sizeof(far));   /* e_shoff */
  CU_EQ(cuModuleLoadData(&m, bad), CUDA_ERROR_INVALID_IMAGE);
  /* A fatbin header whose size overflows. */
  unsigned char fat[16] = { 0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0,
                            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  CU_EQ(cuModuleLoadData(&m, fat), CUDA_ERROR_INVALID_IMAGE);
  free(bad);
  free(cubin);
}
END_TEST

/* The cubin's target must be the fake device's SM (FAKECUDA_SM, read at each call). */
START_TEST(test_image_target_sm)
{
  size_t len;
  unsigned char *sm80 = test_read_data("kernels_sm80.cubin", &len);
  CUmodule m;
  CU_EQ(cuModuleLoadData(&m, sm80), CUDA_ERROR_NO_BINARY_FOR_GPU);
  ck_assert_int_eq(setenv("FAKECUDA_SM", "80", 1), 0);
  int major = 0, minor = -1;
  CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  CU_OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
  ck_assert_int_eq(major, 8);
  ck_assert_int_eq(minor, 0);
  CU_OK(cuModuleLoadData(&m, sm80));
  expect_kernels(m);
  CU_OK(cuModuleUnload(m));
  unsigned char *sm90 = test_read_data("kernels_sm90.cubin", NULL);
  CU_EQ(cuModuleLoadData(&m, sm90), CUDA_ERROR_NO_BINARY_FOR_GPU);
  free(sm90);
  free(sm80);
}
END_TEST

START_TEST(test_load_from_file)
{
  char path[4096];
  CUmodule m;
  CUlibrary lib;
  snprintf(path, sizeof(path), "%s/kernels.ptx", FAKECUDA_TEST_DATA);
  CU_OK(cuModuleLoad(&m, path));
  expect_kernels(m);
  CU_OK(cuModuleUnload(m));
  snprintf(path, sizeof(path), "%s/kernels_sm90.cubin", FAKECUDA_TEST_DATA);
  CU_OK(cuLibraryLoadFromFile(&lib, path, NULL, NULL, 0, NULL, NULL, 0));
  CU_OK(cuLibraryGetModule(&m, lib));
  expect_kernels(m);
  CU_OK(cuLibraryUnload(lib));
  CU_EQ(cuModuleLoad(&m, "/nonexistent/fakecuda.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
}
END_TEST

/* Tests of capguard's deferred unloads rely on a second unload being caught. */
START_TEST(test_double_unload)
{
  CUmodule a = test_load_module("kernels_sm90.cubin");
  CUfunction fa;
  CU_OK(cuModuleGetFunction(&fa, a, "fake_scale"));
  CU_OK(cuModuleUnload(a));
  CU_EQ(cuModuleUnload(a), CUDA_ERROR_INVALID_HANDLE);
  CU_EQ(cuModuleUnload((CUmodule)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
  CU_EQ(cuModuleUnload(NULL), CUDA_ERROR_INVALID_HANDLE);
  const char *name;
  CU_EQ(cuFuncGetName(&name, fa), CUDA_ERROR_INVALID_HANDLE);   /* died with its module */
  /* A later module never takes the dead one's handle. */
  CUmodule b = test_load_module("kernels_sm90.cubin");
  ck_assert_ptr_ne(a, b);
  CU_EQ(cuModuleUnload(a), CUDA_ERROR_INVALID_HANDLE);
  CUfunction fb;
  CU_OK(cuModuleGetFunction(&fb, b, "fake_scale"));
  CU_OK(cuModuleUnload(b));

  unsigned char *img = test_read_data("kernels_sm90.cubin", NULL);
  CUlibrary lib;
  CU_OK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
  CUmodule lm;
  CU_OK(cuLibraryGetModule(&lm, lib));
  CU_EQ(cuModuleUnload(lm), CUDA_ERROR_INVALID_HANDLE);   /* the library owns it */
  CU_OK(cuLibraryUnload(lib));
  CU_EQ(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
  free(img);
}
END_TEST

/* What a test of capguard needs to see: which kernels a captured graph holds. */
START_TEST(test_graph_kernel_listing)
{
  CUmodule m = test_load_module("kernels_sm90.cubin");
  unsigned char *ptx = test_read_data("kernels.ptx", NULL);
  CUlibrary lib;
  CU_OK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CUkernel k;
  CUfunction add_one, scale, lib_scale;
  CU_OK(cuModuleGetFunction(&add_one, m, "fake_add_one"));
  CU_OK(cuModuleGetFunction(&scale, m, "fake_scale"));
  CU_OK(cuLibraryGetKernel(&k, lib, "fake_scale"));
  CU_OK(cuKernelGetFunction(&lib_scale, k));
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cuLaunchKernel(scale, 2, 1, 1, 64, 1, 1, 0, s, NULL, NULL));
  CUdeviceptr p;
  CU_OK(cuMemAllocAsync(&p, 256, s));
  CU_OK(cuLaunchKernel(add_one, 3, 1, 1, 128, 1, 1, 0, s, NULL, NULL));
  CU_OK(cuLaunchKernel(lib_scale, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));

  CUstreamCaptureStatus st;
  cuuint64_t id = 0;
  CUgraph during = NULL;
  const CUgraphNode *deps = NULL;
  const CUgraphEdgeData *edges = (const CUgraphEdgeData *)&st;
  size_t ndeps = 0;
  CU_OK(cuStreamGetCaptureInfo_v3(s, &st, &id, &during, &deps, &edges, &ndeps));
  ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  ck_assert_uint_ne(id, 0);
  ck_assert_uint_eq(ndeps, 1);
  CUDA_KERNEL_NODE_PARAMS last;
  CU_OK(cuGraphKernelNodeGetParams_v2(deps[0], &last));
  ck_assert_ptr_eq(last.func, lib_scale);

  CUgraph g;
  CU_OK(cuStreamEndCapture(s, &g));
  ck_assert_ptr_eq(g, during);
  size_t n = 0;
  CU_OK(cuGraphGetNodes(g, NULL, &n));
  ck_assert_uint_eq(n, 4);
  char names[256];
  test_kernel_names(g, names, sizeof(names));
  ck_assert_str_eq(names, "fake_scale,fake_add_one,fake_scale");
  CUgraphNode nodes[4];
  CU_OK(cuGraphGetNodes(g, nodes, &n));
  CUDA_KERNEL_NODE_PARAMS p2;
  CU_OK(cuGraphKernelNodeGetParams_v2(nodes[2], &p2));
  ck_assert_uint_eq(p2.gridDimX, 3);
  ck_assert_uint_eq(p2.blockDimX, 128);
  CU_EQ(cuGraphKernelNodeGetParams_v2(nodes[1], &p2), CUDA_ERROR_INVALID_VALUE);  /* mem alloc */

  /* A graph whose kernel's module has been unloaded can no longer run. */
  CUgraphExec x;
  CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
  CU_OK(cuGraphLaunch(x, s));
  CU_OK(cuModuleUnload(m));
  CU_EQ(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_HANDLE);
  CU_OK(cuGraphExecDestroy(x));
  CU_OK(cuGraphDestroy(g));
  CU_OK(cuMemFree(p));
  CU_OK(cuLibraryUnload(lib));
  CU_OK(cuStreamDestroy(s));
  free(ptx);
}
END_TEST

/* Capture bookkeeping outside the table: ToGraph, the legacy stream, wrong-thread end,
 * work on an invalidated capture, the 10.0 entry point without a mode. */
static CUstream shared_stream;
static CUresult other_end_rc;
static void *end_from_other_thread(void *arg)
{
  CUgraph g;
  (void)arg;
  other_end_rc = cuCtxSetCurrent(test_ctx);
  if (other_end_rc == CUDA_SUCCESS)
    other_end_rc = cuStreamEndCapture(shared_stream, &g);
  return NULL;
}

START_TEST(test_capture_bookkeeping)
{
  CUmodule m = test_load_module("kernels_sm90.cubin");
  CUfunction f;
  CU_OK(cuModuleGetFunction(&f, m, "fake_add_one"));
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUgraph g0, g;

  CU_OK(cuGraphCreate(&g0, 0));
  CU_OK(cuStreamBeginCaptureToGraph(s, g0, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CU_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  CU_OK(cuStreamEndCapture(s, &g));
  ck_assert_ptr_eq(g, g0);
  CU_OK(cuGraphDestroy(g0));

  CU_EQ(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
        CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);

  shared_stream = s;
  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, end_from_other_thread, NULL), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_int_eq(other_end_rc, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  /* Refused, and over (test_ends.c has the measured cells). */
  CUstreamCaptureStatus st;
  CU_OK(cuStreamIsCapturing(s, &st));
  ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
  CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);

  /* Work on an invalidated capture. */
  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUdeviceptr p;
  CU_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CU_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CU_EQ(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CU_OK(cuStreamGetCaptureInfo_v3(s, &st, NULL, NULL, NULL, NULL, NULL));
  ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  g = (CUgraph)&st;
  CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  ck_assert_ptr_null(g);
  CU_OK(cuStreamIsCapturing(s, &st));
  ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);

  /* The 10.0 form, reached through cuGetProcAddress, captures in GLOBAL mode. */
  CUresult (*begin_v1)(CUstream) = NULL;   /* PFN_cuStreamBeginCapture_v10000 is internal */
  CU_OK(cuGetProcAddress_v2("cuStreamBeginCapture", (void **)&begin_v1, 10000, 0, NULL));
  CU_OK(begin_v1(s));
  CU_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);   /* global: prohibited */
  CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  /* Thread modes: a RELAXED thread may allocate during its own GLOBAL capture. */
  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  ck_assert_int_eq(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CU_OK(cuMemAlloc(&p, 16));
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CU_OK(cuStreamEndCapture(s, &g));
  CU_OK(cuGraphDestroy(g));
  CU_OK(cuMemFree(p));
  mode = (CUstreamCaptureMode)7;
  CU_EQ(cuThreadExchangeStreamCaptureMode(&mode), CUDA_ERROR_INVALID_VALUE);

  CU_OK(cuStreamDestroy(s));
  CU_OK(cuModuleUnload(m));
}
END_TEST

/* The rule's caller side, which the measured table does not vary (its callers are all
 * GLOBAL): a THREAD_LOCAL thread is prohibited only by its own non-relaxed capture. */
static CUresult thread_local_alloc_rc;
static void *alloc_as_thread_local(void *arg)
{
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  CUdeviceptr p = 0;
  (void)arg;
  thread_local_alloc_rc = cuCtxSetCurrent(test_ctx);
  if (thread_local_alloc_rc == CUDA_SUCCESS)
    thread_local_alloc_rc = cuThreadExchangeStreamCaptureMode(&mode);
  if (thread_local_alloc_rc == CUDA_SUCCESS)
    thread_local_alloc_rc = cuMemAlloc(&p, 64);
  if (thread_local_alloc_rc == CUDA_SUCCESS)
    thread_local_alloc_rc = cuMemFree(p);
  return NULL;
}

START_TEST(test_prohibition_thread_local_caller)
{
  CUstream s;
  CUgraph g;
  CUdeviceptr p;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, alloc_as_thread_local, NULL), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_int_eq(thread_local_alloc_rc, CUDA_SUCCESS);   /* another thread's capture */
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CU_EQ(cuMemAlloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);   /* its own capture */
  CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
  CU_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *suite_modules(void)
{
  Suite *s = suite_create("modules and graphs");
  TCase *tc = tcase_create("images");
  tcase_add_checked_fixture(tc, test_setup, NULL);
  tcase_add_loop_test(tc, test_image_exact_size, 0, 3);
  tcase_add_test(tc, test_image_fatbin_wrapper);
  tcase_add_test(tc, test_image_ptx_rules);
  tcase_add_test(tc, test_image_rejections);
  tcase_add_test(tc, test_image_target_sm);
  tcase_add_test(tc, test_load_from_file);
  tcase_add_test(tc, test_double_unload);
  tcase_add_test(tc, test_graph_kernel_listing);
  tcase_add_test(tc, test_capture_bookkeeping);
  tcase_add_test(tc, test_prohibition_thread_local_caller);
  suite_add_tcase(s, tc);
  return s;
}
