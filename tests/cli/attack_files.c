/* Attacks (docs/reliability.md) on what capguard writes and counts, over the fake
 * driver (found as libcuda.so.1 through LD_LIBRARY_PATH):
 *   attack_files load-unload N
 *       N captures, one after another, each loading the same PTX image and
 *       unloading it inside the capture (attack 10: at most 1 copy alive);
 *   attack_files open-at-exit N
 *       begins N captures (relaxed mode, N streams), launches nothing more
 *       and exits 0 without ending them (attack 7);
 *   attack_files open-broken 1
 *       begins a global capture, loads an image in it (a driver before 12.3
 *       refuses it and so breaks the capture) and exits 0 with it open;
 *   attack_files fill IMAGES FILE
 *       one capture loading IMAGES distinct PTX images of about 1.5 KB each
 *       (each recorded in guard mode, each one log line), ended; then checks
 *       that SIGXFSZ is still the host's own (default action, not blocked,
 *       not pending), says "host: SIGXFSZ as it was", and writes 64 KiB to
 *       FILE itself: under a file-size limit the host's own write must still
 *       raise SIGXFSZ (attack 6).
 * Exit: 0, 1 when a driver call failed (named on stderr), 2 usage. */
#include <cuda.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver_open.h"

static CUresult (*begin)(CUstream, CUstreamCaptureMode);
static CUresult (*end)(CUstream, CUgraph *);
static CUresult (*load)(CUmodule *, const void *);
static CUresult (*unload)(CUmodule);
static CUresult (*graph_destroy)(CUgraph);
static CUresult (*stream_create)(CUstream *, unsigned);

static int failed(const char *what, CUresult r) {
  fprintf(stderr, "attack_files: %s failed (CUresult %d)\n", what, (int)r);
  return 1;
}

static char *ptx(const char *entry, size_t pad) {
  char *s = NULL;
  char *fill = malloc(pad + 1);
  memset(fill, 'x', pad);
  fill[pad] = 0;
  if (asprintf(&s, ".version 8.0\n.target sm_80\n.address_size 64\n// %s\n.visible .entry %s()\n{\n\tret;\n}\n",
               fill, entry) < 0)
    exit(2);
  free(fill);
  return s;
}

static int load_unload(int n) {
  char *img = ptx("k_x", 0);
  CUstream s;
  CUresult r;
  if ((r = stream_create(&s, CU_STREAM_NON_BLOCKING)))
    return failed("cuStreamCreate", r);
  for (int i = 0; i < n; i++) {
    CUmodule m;
    CUgraph g = NULL;
    if ((r = begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL)))
      return failed("cuStreamBeginCapture", r);
    if ((r = load(&m, img)))
      return failed("cuModuleLoadData", r);
    if ((r = unload(m)))
      return failed("cuModuleUnload", r);
    if ((r = end(s, &g)))
      return failed("cuStreamEndCapture", r);
    graph_destroy(g);
  }
  printf("attack_files: %d load-and-unload captures ended\n", n);
  return 0;
}

static int open_at_exit(int n) {
  for (int i = 0; i < n; i++) {
    CUstream s;
    CUresult r;
    if ((r = stream_create(&s, CU_STREAM_NON_BLOCKING)) || (r = begin(s, CU_STREAM_CAPTURE_MODE_RELAXED)))
      return failed("begin", r);
  }
  printf("attack_files: exiting with %d captures open\n", n);
  fflush(stdout);
  exit(0);
}

static int open_broken(void) {
  CUstream s;
  CUresult r;
  CUmodule m;
  if ((r = stream_create(&s, CU_STREAM_NON_BLOCKING)) || (r = begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL)))
    return failed("begin", r);
  r = load(&m, ptx("k_open", 0));
  printf("attack_files: load in the capture answered %d; exiting with it open\n", (int)r);
  fflush(stdout);
  exit(0);
}

static int fill(int images, const char *file) {
  CUstream s;
  CUresult r;
  CUgraph g = NULL;
  if ((r = stream_create(&s, CU_STREAM_NON_BLOCKING)) || (r = begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL)))
    return failed("begin", r);
  for (int i = 0; i < images; i++) {
    char name[32];
    snprintf(name, sizeof name, "k_fill_%d", i);
    char *img = ptx(name, 1400);
    CUmodule m;
    if ((r = load(&m, img)))
      return failed("cuModuleLoadData", r);
    free(img);
  }
  if ((r = end(s, &g)))
    return failed("cuStreamEndCapture", r);
  struct sigaction sa;
  sigset_t mask, pending;
  sigaction(SIGXFSZ, NULL, &sa);
  sigprocmask(SIG_BLOCK, NULL, &mask);
  sigpending(&pending);
  if (sa.sa_handler != SIG_DFL || sigismember(&mask, SIGXFSZ) || sigismember(&pending, SIGXFSZ)) {
    printf("host: SIGXFSZ changed: handler %s, blocked %d, pending %d\n", sa.sa_handler == SIG_DFL ? "default" : "other",
           sigismember(&mask, SIGXFSZ), sigismember(&pending, SIGXFSZ));
    return 1;
  }
  printf("host: SIGXFSZ as it was\n");
  fflush(stdout);
  FILE *f = fopen(file, "w");
  static char big[65536];
  if (!f || fwrite(big, 1, sizeof big, f) != sizeof big || fclose(f) != 0) {
    printf("host: its own write failed without SIGXFSZ\n");
    return 1;
  }
  printf("host: wrote 64 KiB\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3)
    goto usage;
  if (tk_driver_open("attack_files") != 0)
    return 1;
  begin = tk_driver_get("cuStreamBeginCapture");
  end = tk_driver_get("cuStreamEndCapture");
  load = tk_driver_get("cuModuleLoadData");
  unload = tk_driver_get("cuModuleUnload");
  graph_destroy = tk_driver_get("cuGraphDestroy");
  stream_create = tk_driver_get("cuStreamCreate");
  CUresult r = tk_driver_setup(NULL);
  if (r)
    return failed("driver set-up", r);
  int n = atoi(argv[2]);
  if (!strcmp(argv[1], "load-unload"))
    return load_unload(n);
  if (!strcmp(argv[1], "open-at-exit"))
    return open_at_exit(n);
  if (!strcmp(argv[1], "open-broken"))
    return open_broken();
  if (!strcmp(argv[1], "fill") && argc == 4)
    return fill(n, argv[3]);
usage:
  fprintf(stderr, "usage: attack_files load-unload N | open-at-exit N | fill IMAGES FILE\n");
  return 2;
}
