/* A host that goes wrong after it has begun a capture, for `capguard run`
 * and `capguard report` tests over the fake driver: it begins a capture,
 * loads KERNEL's image in it (a first use, as a JIT does), then
 *   kill   kills itself with SIGKILL (the OOM killer, a watchdog's kill -9);
 *   segv   dies of SIGSEGV (a crash in the host's own code);
 *   alloc  also calls cuMemAlloc in the capture, ends it, and exits 1 if it
 *          broke (an allocation that priming cannot make go away);
 *   quiet-kill  kills itself before it makes any call during the capture;
 *   int, term   dies of SIGINT (Ctrl-C) or SIGTERM (a supervisor's stop)
 *          with the capture open, before any call in it.
 * It reaches the driver as cudart does (testkit/driver_open.h).
 * Usage: dying_host kill|segv|alloc|quiet-kill|int|term CUBIN KERNEL */
#include <cuda.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capguard/file_read.h"
#include "driver_open.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: dying_host kill|segv|alloc|quiet-kill|int|term CUBIN KERNEL\n");
    return 2;
  }
  const char *how = argv[1];
  size_t image_size;
  void *image = cg_read_file(argv[2], (size_t)1 << 30, &image_size);
  if (!image || tk_driver_open("host") != 0) {
    fprintf(stderr, "host: cannot start\n");
    return 2;
  }
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = tk_driver_get("cuStreamBeginCapture");
  CUresult (*end)(CUstream, CUgraph *) = tk_driver_get("cuStreamEndCapture");
  CUresult (*load)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUresult (*alloc)(CUdeviceptr *, size_t) = tk_driver_get("cuMemAlloc");
  CUstream s;
  if (tk_driver_setup(&s)) {
    fprintf(stderr, "host: driver set-up failed\n");
    return 2;
  }
  begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  if (!strcmp(how, "quiet-kill"))
    raise(SIGKILL);
  if (!strcmp(how, "int") || !strcmp(how, "term")) {
    signal(how[0] == 'i' ? SIGINT : SIGTERM, SIG_DFL);
    raise(how[0] == 'i' ? SIGINT : SIGTERM);
  }
  CUmodule m;
  load(&m, image);
  if (!strcmp(how, "kill"))
    raise(SIGKILL);
  if (!strcmp(how, "segv")) {
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  }
  CUdeviceptr p;
  alloc(&p, 1 << 20);
  CUgraph g = NULL;
  if (end(s, &g) != CUDA_SUCCESS) {
    fprintf(stderr, "host: CUDA graph capture failed\n");
    return 1;
  }
  printf("host: graph captured\n");
  return 0;
}
