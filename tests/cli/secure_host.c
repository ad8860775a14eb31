/* A host for secure execution (test_secure_exec.sh makes a copy of it
 * set-user-ID and runs it as another user). The shim is linked in
 * (DT_NEEDED), since ld.so ignores an LD_PRELOAD that names a path in secure
 * mode, and so is the fake driver, both found through absolute DT_RPATH
 * entries, which secure mode keeps (tests/cli/meson.build). Prints its real
 * and effective uid and AT_SECURE as the kernel set it, then breaks one
 * capture (an allocation in a global capture, and a load of the image
 * argv[1] names, which a 12.2 driver refuses and capguard would record),
 * which capguard counts and reports on stderr; exit 0, or 2 when a driver
 * call or the image it needs failed. */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#define CHECK(call)                                            \
  do {                                                         \
    CUresult r_ = (call);                                      \
    if (r_ != CUDA_SUCCESS) {                                  \
      printf("secure_host: %s returned %d\n", #call, (int)r_); \
      return 2;                                                \
    }                                                          \
  } while (0)

/* The image at path, whole, in memory (NULL when it cannot be read). */
static void *read_image(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf = f ? malloc(1 << 20) : NULL;
  size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
  if (f)
    fclose(f);
  if (!n) {
    free(buf);
    return NULL;
  }
  return buf;
}

int main(int argc, char **argv) {
  printf("uid=%d euid=%d at_secure=%lu\n", (int)getuid(), (int)geteuid(), getauxval(AT_SECURE));
  fflush(stdout);
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CUgraph g = NULL;
  CUdeviceptr p;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  void *image = argc > 1 ? read_image(argv[1]) : NULL;
  if (argc > 1 && !image) {
    printf("secure_host: cannot read %s\n", argv[1]);
    return 2;
  }
  CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUmodule m;
  CUresult load = image ? cuModuleLoadData(&m, image) : CUDA_SUCCESS;
  CUresult alloc = cuMemAlloc(&p, 256); /* refused: the capture prohibits the thread */
  CUresult end = cuStreamEndCapture(s, &g);
  printf("load=%d alloc=%d end=%d\n", (int)load, (int)alloc, (int)end);
  free(image);
  return 0;
}
