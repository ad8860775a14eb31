/* A host whose priming file changes under it, or which changes directory,
 * over the fake driver (found as libcuda.so.1 through LD_LIBRARY_PATH):
 *   host_prime CAPTURES [--chdir DIR] [--then CMD] [--watch FILE]
 *       first changes its working directory to DIR; then CAPTURES captures
 *       one after another, each loading one of two PTX images (k_prime_a,
 *       k_prime_b, in turn) and keeping it loaded; after the first capture
 *       it runs CMD with system() (an operator rewriting the priming file in
 *       place, say). With --watch, FILE's size and time are looked at before
 *       each begin and after the load in the capture. Says "host: N
 *       captures, M loads answered 0, FILE changed during K captures" and
 *       exits 0; a load a driver before 12.3 refuses during capture is no
 *       error.
 * Exit: 0, 1 when a driver call failed (said on stdout), 2 usage. */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver_open.h"

static const char *const images[2] = {
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k_prime_a()\n{\n\tret;\n}\n",
    ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k_prime_b()\n{\n\tret;\n}\n",
};

int main(int argc, char **argv) {
  if (argc < 2)
    goto usage;
  int captures = atoi(argv[1]);
  const char *dir = NULL, *then = NULL, *watch = NULL;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--chdir") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--then") && i + 1 < argc)
      then = argv[++i];
    else if (!strcmp(argv[i], "--watch") && i + 1 < argc)
      watch = argv[++i];
    else
      goto usage;
  }
  if (captures < 1)
    goto usage;
  if (dir && chdir(dir) != 0) {
    printf("host_prime: cannot change to %s\n", dir);
    return 1;
  }
  if (tk_driver_open("host_prime") != 0)
    return 1;
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = tk_driver_get("cuStreamBeginCapture");
  CUresult (*end)(CUstream, CUgraph *) = tk_driver_get("cuStreamEndCapture");
  CUresult (*load)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUresult (*graph_destroy)(CUgraph) = tk_driver_get("cuGraphDestroy");
  CUstream s;
  CUresult r = tk_driver_setup(&s);
  if (r) {
    printf("host_prime: driver set-up failed (CUresult %d)\n", (int)r);
    return 1;
  }
  int ok = 0, changed = 0;
  for (int i = 0; i < captures; i++) {
    CUmodule m;
    CUgraph g = NULL;
    struct stat before = {0}, during = {0};
    if (watch)
      stat(watch, &before);
    if ((r = begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL))) {
      printf("host_prime: begin failed (CUresult %d)\n", (int)r);
      return 1;
    }
    ok += load(&m, images[i % 2]) == CUDA_SUCCESS;
    if (watch) {
      stat(watch, &during);
      changed += during.st_size != before.st_size || during.st_mtim.tv_sec != before.st_mtim.tv_sec ||
                 during.st_mtim.tv_nsec != before.st_mtim.tv_nsec;
    }
    if (end(s, &g) == CUDA_SUCCESS && g)
      graph_destroy(g);
    if (i == 0 && then) {
      fflush(stdout);
      if (system(then) != 0) {
        printf("host_prime: '%s' failed\n", then);
        return 1;
      }
    }
  }
  printf("host: %d captures, %d loads answered 0", captures, ok);
  if (watch)
    printf(", %s changed during %d captures", watch, changed);
  printf("\n");
  return 0;
usage:
  fprintf(stderr, "usage: host_prime CAPTURES [--chdir DIR] [--then CMD] [--watch FILE]\n");
  return 2;
}
