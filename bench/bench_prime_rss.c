/* Memory a large priming file costs a process: write a file holding one
 * PTX image of MB megabytes, then, in a process of its own under the shim,
 * begin one capture (capguard reads the file and preloads what fits this
 * device) and print the process's peak and current resident memory.
 * Usage: bench_prime_rss write PATH MB | bench_prime_rss begin
 * Prints "name kB" lines (VmHWM, RssAnon, RssFile). */
#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/image.h"
#include "capguard/prime_file.h"
#include "driver_open.h"

static int write_file(const char *path, size_t mb) {
  static const char head[] = ".version 8.0\n.target sm_80\n.address_size 64\n";
  static const char tail[] = ".visible .entry bench_big()\n{\n\tret;\n}\n";
  size_t size = mb << 20;
  char *t = malloc(size);
  if (!t) return 2;
  memcpy(t, head, sizeof head - 1);
  size_t at = sizeof head - 1, line = 0;
  while (at + sizeof tail + 80 < size) { /* comment lines of 64 characters */
    memcpy(t + at, "// ", 3);
    memset(t + at + 3, 'a' + (char)(line++ % 26), 60);
    t[at + 63] = '\n';
    at += 64;
  }
  memcpy(t + at, tail, sizeof tail); /* with its NUL: a PTX image ends at its NUL */
  cg_image_info info;
  if (cg_image_inspect(t, at + sizeof tail, &info)) return 2;
  cg_prime_record r = {.kind = info.kind, .sm_arch = info.sm_arch, .hash = info.hash, .size = info.size,
                       .bytes = info.data, .n_kernels = info.n_kernels,
                       .names_len = (uint32_t)strlen(info.kernel_names) + 1, .kernel_names = info.kernel_names,
                       .hits = 1, .first_ns = 1, .last_ns = 1};
  return cg_prime_add_records(path, &r, 1, NULL, NULL) ? 2 : 0;
}

static void status(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    long kb;
    char name[32];
    if (sscanf(line, "%31[^:]: %ld kB", name, &kb) == 2 &&
        (!strcmp(name, "VmHWM") || !strcmp(name, "RssAnon") || !strcmp(name, "RssFile")))
      printf("%s %ld\n", name, kb);
  }
  if (f) fclose(f);
}

static int begin(void) {
  if (tk_driver_open_dlsym("bench") != 0) return 2;
  CUresult (*begin_capture)(CUstream, CUstreamCaptureMode) = tk_driver_get("cuStreamBeginCapture_v2");
  CUresult (*end_capture)(CUstream, CUgraph *) = tk_driver_get("cuStreamEndCapture");
  CUstream s;
  CUgraph g;
  if (tk_driver_setup(&s) || begin_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) || end_capture(s, &g))
    return 2;
  status();
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "write")) return write_file(argv[2], (size_t)atoi(argv[3]));
  if (argc == 2 && !strcmp(argv[1], "begin")) return begin();
  fprintf(stderr, "usage: bench_prime_rss write PATH MB | bench_prime_rss begin\n");
  return 2;
}
