/* What the metrics file's writer does around captures (test_cli_metrics.sh),
 * over the fake driver with the shim preloaded and CAPGUARD_METRICS=DIR:
 *   metrics_probe timing DIR   says when this process's file was replaced:
 *     after a first capture's end (the first write); not at an end while
 *     another capture is still open, though a second has passed; after the
 *     last open capture's end; not again within the second; then at a graph
 *     launch once the second is over (the write left due).
 *   metrics_probe churn SECONDS   captures back to back for SECONDS (the
 *     file is replaced about once a second while a reader races it).
 *   metrics_probe firstend DIR   one capture: says how long its end took and
 *     how many capguard_*.prom files DIR holds just after it (its own write
 *     included), while the process lives.
 *   metrics_probe clockstep SECONDS   three captures of 5 ms, the wall clock
 *     stepped by SECONDS (wall_clock_step.c, preloaded) inside the first,
 *     then the first graph launched (the first replay).
 *   metrics_probe late-break SECONDS CUBIN   an engine's life: loads CUBIN
 *     (its first use of a kernel), works for SECONDS, then captures and loads
 *     CUBIN again in the capture (refused on a driver before 12.3, or
 *     emulated, so the capture breaks) and exits 1; a scraper meanwhile sees
 *     the process's series from its start.
 * A file is replaced by a rename: its inode changes with each write. */
#include <cuda.h>
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capguard/file_read.h"
#include "driver_open.h"

static CUresult (*begin)(CUstream, CUstreamCaptureMode);
static CUresult (*end)(CUstream, CUgraph *);
static CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*graph_launch)(CUgraphExec, CUstream);
static CUresult (*stream_create)(CUstream *, unsigned);
static const char *dir;

/* This process's file's inode, 0 when there is none. */
static unsigned long long inode(void) {
  char pattern[4096];
  snprintf(pattern, sizeof pattern, "%s/capguard_*_%d.prom", dir, (int)getpid());
  glob_t g;
  unsigned long long ino = 0;
  struct stat st;
  if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc == 1 && stat(g.gl_pathv[0], &st) == 0)
    ino = (unsigned long long)st.st_ino;
  if (g.gl_pathc)
    globfree(&g);
  return ino;
}

static void nap(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int check(const char *what, CUresult r) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "metrics_probe: %s failed: %d\n", what, (int)r);
    exit(2);
  }
  return 0;
}

static CUgraph capture(CUstream s) {
  CUgraph g = NULL;
  check("begin", begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  check("end", end(s, &g));
  return g;
}

static void said(const char *when, unsigned long long before) {
  unsigned long long now = inode();
  printf("%s: %s\n", when, !now ? "no file" : now == before ? "not written" : "written");
}

static int timing(void) {
  CUstream s1, s2;
  check("setup", tk_driver_setup(&s1));
  check("stream", stream_create(&s2, CU_STREAM_NON_BLOCKING));
  CUgraph g = capture(s1);
  said("first end", 0);
  unsigned long long i0 = inode();
  check("begin 1", begin(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
  nap(1200);
  CUgraph g2 = NULL;
  check("begin 2", begin(s2, CU_STREAM_CAPTURE_MODE_RELAXED));
  check("end 2", end(s2, &g2));
  said("end while another capture is open", i0); /* a second has passed: only the open capture holds it */
  CUgraph g1 = NULL;
  check("end 1", end(s1, &g1));
  said("end of the last open capture", i0);
  unsigned long long i1 = inode();
  capture(s1);
  said("end within the second", i1);
  CUgraphExec exec;
  check("instantiate", instantiate(&exec, g, 0));
  nap(1100);
  check("launch", graph_launch(exec, s1));
  said("graph launch after the second", i1);
  return 0;
}

static int churn(double seconds) {
  CUstream s;
  check("setup", tk_driver_setup(&s));
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long n = 0;
  do {
    capture(s);
    n++;
    nap(2);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
  printf("churn: %lu captures\n", n);
  return 0;
}

static long files_in(const char *d) {
  char pattern[4096];
  snprintf(pattern, sizeof pattern, "%s/capguard_*.prom", d);
  glob_t g;
  long n = glob(pattern, 0, NULL, &g) == 0 ? (long)g.gl_pathc : 0;
  if (n)
    globfree(&g);
  return n;
}

static int firstend(void) {
  CUstream s;
  check("setup", tk_driver_setup(&s));
  CUgraph g = NULL;
  struct timespec t0, t1;
  check("begin", begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  clock_gettime(CLOCK_MONOTONIC, &t0);
  check("end", end(s, &g));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
  printf("first end: %ld us, %ld files\n", us, files_in(dir));
  return 0;
}

static int clockstep(double seconds) {
  void (*step)(long long) = (void (*)(long long))dlsym(RTLD_DEFAULT, "wall_clock_step");
  if (!step) {
    fprintf(stderr, "metrics_probe: clockstep needs wall_clock_step.so preloaded\n");
    return 2;
  }
  CUstream s;
  check("setup", tk_driver_setup(&s));
  CUgraph g = NULL;
  for (int i = 0; i < 3; i++) {
    check("begin", begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    nap(5);
    if (i == 0)
      step((long long)(seconds * 1e9));
    check("end", end(s, i ? &(CUgraph){NULL} : &g));
  }
  CUgraphExec exec;
  check("instantiate", instantiate(&exec, g, 0));
  check("launch", graph_launch(exec, s));
  printf("clockstep: 3 captures, wall clock stepped %+.0f s\n", seconds);
  return 0;
}

static int late_break(double seconds, const char *cubin) {
  size_t size;
  void *image = cg_read_file(cubin, (size_t)1 << 30, &size);
  CUresult (*load)(CUmodule *, const void *) = tk_driver_get("cuModuleLoadData");
  CUstream s;
  CUmodule warm, jit;
  check("setup", tk_driver_setup(&s));
  if (!image) {
    fprintf(stderr, "metrics_probe: cannot read %s\n", cubin);
    return 2;
  }
  check("load", load(&warm, image));
  nap((long)(seconds * 1000));
  check("begin", begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CUresult r = load(&jit, image);
  CUgraph g = NULL;
  CUresult e = end(s, &g);
  printf("late-break: load in capture %d, end %d\n", (int)r, (int)e);
  return e == CUDA_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 4 && !strcmp(argv[1], "late-break") && tk_driver_open("metrics_probe") == 0) {
    begin = tk_driver_get("cuStreamBeginCapture");
    end = tk_driver_get("cuStreamEndCapture");
    return late_break(atof(argv[2]), argv[3]);
  }
  if (argc != 3 || tk_driver_open("metrics_probe") != 0) {
    fprintf(stderr, "usage: metrics_probe timing DIR | churn SECONDS | clockstep SECONDS | late-break SECONDS CUBIN "
                    "(with a driver)\n");
    return 2;
  }
  begin = tk_driver_get("cuStreamBeginCapture");
  end = tk_driver_get("cuStreamEndCapture");
  instantiate = tk_driver_get("cuGraphInstantiateWithFlags");
  graph_launch = tk_driver_get("cuGraphLaunch");
  stream_create = tk_driver_get("cuStreamCreate");
  if (!strcmp(argv[1], "timing")) {
    dir = argv[2];
    return timing();
  }
  if (!strcmp(argv[1], "churn"))
    return churn(atof(argv[2]));
  if (!strcmp(argv[1], "firstend")) {
    dir = argv[2];
    return firstend();
  }
  if (!strcmp(argv[1], "clockstep"))
    return clockstep(atof(argv[2]));
  fprintf(stderr, "metrics_probe: unknown mode '%s'\n", argv[1]);
  return 2;
}
