/* fakecuda: cuGetProcAddress picks the newest variant not newer than the version asked
 * for, honours the per-thread-default-stream flag, and reports unknown symbols and too
 * low versions the way the real driver does. Expected functions are looked up by their
 * exported names with dlsym, as cudart and torch do. */
#include "test_util.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stddef.h>

enum { PTDS = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM };

struct proc_case {
  const char *symbol;
  int version;
  cuuint64_t flags;
  const char *want;      /* exported name expected, NULL for "not found" */
  CUdriverProcAddressQueryResult status;
};

static const struct proc_case cases[] = {
  { "cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCapture", 10000, PTDS, "cuStreamBeginCapture_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCapture", 10010, PTDS, "cuStreamBeginCapture_v2_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCapture", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuStreamBeginCapture_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCapture", 9020, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
  { "cuGetProcAddress", 11030, 0, "cuGetProcAddress", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuGetProcAddress", 11020, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
  { "cuStreamGetCaptureInfo", 10010, 0, "cuStreamGetCaptureInfo", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamGetCaptureInfo", 12020, 0, "cuStreamGetCaptureInfo_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamGetCaptureInfo", 12030, 0, "cuStreamGetCaptureInfo_v3", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamGetCaptureInfo", 10010, PTDS, "cuStreamGetCaptureInfo_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamGetCaptureInfo", 11030, PTDS, "cuStreamGetCaptureInfo_v2_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamGetCaptureInfo", 12030, PTDS, "cuStreamGetCaptureInfo_v3_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuMemAlloc", 3020, 0, "cuMemAlloc_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuMemAlloc", 13000, PTDS, "cuMemAlloc_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCaptureToGraph", 12030, 0, "cuStreamBeginCaptureToGraph", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCaptureToGraph", 12030, PTDS, "cuStreamBeginCaptureToGraph_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamBeginCaptureToGraph", 12020, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
  { "cuStreamEndCapture", 10000, 0, "cuStreamEndCapture", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuStreamEndCapture", 10000, PTDS, "cuStreamEndCapture_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuThreadExchangeStreamCaptureMode", 10010, 0, "cuThreadExchangeStreamCaptureMode", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuThreadExchangeStreamCaptureMode", 10000, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
  { "cuModuleLoad", 2000, 0, "cuModuleLoad", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuModuleLoadData", 2000, PTDS, "cuModuleLoadData", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuModuleLoadFatBinary", 2000, 0, "cuModuleLoadFatBinary", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuModuleUnload", 2000, 0, "cuModuleUnload", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuLibraryGetModule", 12000, 0, "cuLibraryGetModule", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuLibraryGetModule", 11080, 0, NULL, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
  { "cuLaunchKernel", 4000, 0, "cuLaunchKernel", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuLaunchKernel", 4000, PTDS, "cuLaunchKernel", CU_GET_PROC_ADDRESS_SUCCESS },   /* _ptsz is 7.0 */
  { "cuLaunchKernel", 7000, PTDS, "cuLaunchKernel_ptsz", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuCtxCreate", 12050, 0, "cuCtxCreate_v4", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuCtxCreate", 12000, 0, "cuCtxCreate_v3", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuGraphInstantiate", 12000, 0, "cuGraphInstantiate_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuGraphKernelNodeGetParams", 12000, 0, "cuGraphKernelNodeGetParams_v2", CU_GET_PROC_ADDRESS_SUCCESS },
  { "cuNoSuchEntryPoint", 13000, 0, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },
  { "cuMemAlloc_v2", 13000, 0, NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },  /* base names only */
};
enum { NCASES = sizeof(cases) / sizeof(cases[0]) };

static void *libcuda(void)
{
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ck_assert_msg(h != NULL, "libcuda.so.1 (the fake) is not loaded: %s", dlerror());
  return h;
}

START_TEST(test_proc_case)
{
  const struct proc_case *pc = &cases[_i];
  void *h = libcuda();
  /* cudart's way in: dlsym the 5-argument entry point, then ask it for everything. */
  PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
  ck_assert_ptr_nonnull(gpa);
  void *fn = (void *)&fn;
  CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
  CUresult rc = gpa(pc->symbol, &fn, pc->version, pc->flags, &status);
  ck_assert_msg(status == pc->status, "%s@%d flags %d: status %d, want %d", pc->symbol,
                pc->version, (int)pc->flags, (int)status, (int)pc->status);
  if (pc->want == NULL) {
    ck_assert_msg(rc == CUDA_ERROR_NOT_FOUND && fn == NULL, "%s@%d: rc %d fn %p, want 500 and NULL",
                  pc->symbol, pc->version, (int)rc, fn);
  } else {
    void *want = dlsym(h, pc->want);
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(rc == CUDA_SUCCESS && fn == want, "%s@%d flags %d: rc %d, got %p, want %s (%p)",
                  pc->symbol, pc->version, (int)pc->flags, (int)rc, fn, pc->want, want);
  }
  /* The 4-argument form answers the same. */
  PFN_cuGetProcAddress_v11030 gpa1 = (PFN_cuGetProcAddress_v11030)dlsym(h, "cuGetProcAddress");
  ck_assert_ptr_nonnull(gpa1);
  void *fn1 = (void *)&fn1;
  CUresult rc1 = gpa1(pc->symbol, &fn1, pc->version, pc->flags);
  ck_assert_int_eq(rc1, rc);
  ck_assert_ptr_eq(fn1, fn);
  dlclose(h);
}
END_TEST

START_TEST(test_proc_odd_arguments)
{
  void *fn = NULL;
  CU_OK(cuGetProcAddress_v2("cuInit", &fn, 13000, 0, NULL));   /* status may be NULL */
  ck_assert_ptr_eq(fn, (void *)&cuInit);
  CU_EQ(cuGetProcAddress_v2("cuInit", &fn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE);
  CU_EQ(cuGetProcAddress_v2(NULL, &fn, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
  CU_EQ(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* cudart's bootstrap: "cuGetProcAddress" through cuGetProcAddress_v2, then a call
 * through the result. */
START_TEST(test_proc_bootstrap_and_call)
{
  PFN_cuGetProcAddress_v12000 gpa = NULL;
  CU_OK(cuGetProcAddress_v2("cuGetProcAddress", (void **)&gpa, 12000, 0, NULL));
  PFN_cuDriverGetVersion_v2020 version = NULL;
  CU_OK(gpa("cuDriverGetVersion", (void **)&version, 12000, 0, NULL));
  int v = 0;
  CU_OK(version(&v));
  ck_assert_int_eq(v, test_driver_version());
}
END_TEST

Suite *suite_procaddress(void)
{
  Suite *s = suite_create("cuGetProcAddress");
  TCase *tc = tcase_create("selection");
  tcase_add_loop_test(tc, test_proc_case, 0, NCASES);
  tcase_add_test(tc, test_proc_odd_arguments);
  tcase_add_test(tc, test_proc_bootstrap_and_call);
  suite_add_tcase(s, tc);
  return s;
}
