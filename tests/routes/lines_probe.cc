// The C++ twin of lines_probe.c (test_frame_lines.py): the capture begins
// and breaks in member functions of a namespaced class, so that capguard's
// stderr line shows their demangled names (the program links libstdc++,
// whose __cxa_demangle the shim finds already loaded).
#include <cstdio>
#include <string>

#include "lines_probe_driver.h"

namespace lines {
struct Graph {
  CUstream stream = nullptr;
  __attribute__((noinline)) void capture_begin(const std::string &why);
  __attribute__((noinline)) void allocate(unsigned long bytes);
};

void Graph::capture_begin(const std::string &why) {
  CUresult rc = cuStreamBeginCapture_v2(stream, 0); /* LINE:begin */
  std::printf("begin_result=%d (%s)\n", rc, why.c_str());
}

void Graph::allocate(unsigned long bytes) {
  CUdeviceptr p = 0;
  CUresult rc = cuMemAlloc_v2(&p, bytes); /* LINE:alloc */
  std::printf("alloc_result=%d\n", rc);
}
} // namespace lines

int main() {
  int dev = 0;
  CUcontext ctx = nullptr;
  lines::Graph g;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuStreamCreate(&g.stream, 0)) {
    std::fprintf(stderr, "lines_probe: no driver\n");
    return 2;
  }
  g.capture_begin("test");
  g.allocate(4096);
  void *graph = nullptr;
  std::printf("end_result=%d\n", cuStreamEndCapture(g.stream, &graph));
  return 0;
}
