/* What priming at scale costs, in one process (bench/run_bench_preload.sh runs
 * it under the shim in guard mode):
 *   preload N: N distinct images, each loaded by the driver itself (timed,
 *     then unloaded), then written to the priming file named by
 *     CAPGUARD_PRIME; the first capture begin then preloads all N (timed,
 *     less a plain begin). Prints the ratio preload / driver's own loads.
 *   serve K: one image recorded with K loads per process; the first begin
 *     preloads K modules, then K loads of it mid-capture are each served
 *     (timed one by one); the serving decision alone (inspect + hash + lookup,
 *     the same detect/ code the shim runs before its report) is timed in this
 *     process, and the report is the rest.
 * Images are PTX made in memory, each with its own kernel name; with --cubin
 * and a driver that has cuLink*, each is first compiled to a cubin (untimed),
 * which is what a JIT hands the driver in practice.
 * Usage: bench_preload preload N [--cubin] | bench_preload serve K
 * Prints "name value" lines. */
#include <cuda.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capguard/clock.h"
#include "capguard/image.h"
#include "capture_calls.h"
#include "capguard/prime_file.h"

static double now_ns(void) { return (double)cg_monotonic_ns(); }


typedef CUresult (*link_create_fn)(unsigned, CUjit_option *, void **, CUlinkState *);
typedef CUresult (*link_add_fn)(CUlinkState, CUjitInputType, void *, size_t, const char *, unsigned,
                                CUjit_option *, void **);
typedef CUresult (*link_complete_fn)(CUlinkState, void **, size_t *);
typedef CUresult (*link_destroy_fn)(CUlinkState);

static void *libcuda;
static CUstream stream;

static void setup(void) {
  if (tk_driver_open_dlsym("bench") != 0) {
    fprintf(stderr, "bench: %s\n", dlerror());
    exit(2);
  }
  libcuda = tk_driver_handle();
  capture_calls_resolve();
  /* glibc's first backtrace() loads libgcc_s: a one-time cost of the
   * process (capguard records where each capture begins), not of preloading. */
  void *frames[4];
  backtrace(frames, 4);
  if (tk_driver_setup(&stream)) {
    fprintf(stderr, "bench: driver set-up failed\n");
    exit(2);
  }
}

typedef struct {
  void *bytes;
  size_t size;
} image;

static image make_ptx(unsigned i) {
  char *s = NULL;
  int n = asprintf(&s,
                   ".version 8.0\n.target sm_80\n.address_size 64\n\n"
                   ".visible .entry bench_kernel_%u(.param .u64 p)\n{\n\t.reg .b64 %%rd<2>;\n"
                   "\tld.param.u64 %%rd1, [p];\n\tst.global.u32 [%%rd1], %u;\n\tret;\n}\n",
                   i, i);
  if (n < 0)
    exit(2);
  return (image){s, (size_t)n + 1};
}

/* PTX -> cubin with the driver's own linker; the PTX when that is not there. */
static image to_cubin(image ptx) {
  link_create_fn create = (link_create_fn)dlsym(libcuda, "cuLinkCreate_v2");
  link_add_fn add = (link_add_fn)dlsym(libcuda, "cuLinkAddData_v2");
  link_complete_fn complete = (link_complete_fn)dlsym(libcuda, "cuLinkComplete");
  link_destroy_fn destroy = (link_destroy_fn)dlsym(libcuda, "cuLinkDestroy");
  CUlinkState st;
  void *out;
  size_t size;
  if (!create || !add || !complete || !destroy || create(0, NULL, NULL, &st))
    return ptx;
  image r = ptx;
  if (!add(st, CU_JIT_INPUT_PTX, ptx.bytes, ptx.size, "bench", 0, NULL, NULL) && !complete(st, &out, &size)) {
    r.bytes = malloc(size);
    memcpy(r.bytes, out, size);
    r.size = size;
    free(ptx.bytes);
  }
  destroy(st);
  return r;
}

static void record_of(const image *img, uint32_t loads, cg_prime_record *r, cg_image_info *info) {
  if (cg_image_inspect(img->bytes, img->size, info)) {
    fprintf(stderr, "bench: made an image capguard does not recognise (%s)\n", info->why_unknown);
    exit(2);
  }
  uint32_t names = 0;
  for (const char *k = cg_image_first_kernel(info); k; k = cg_image_next_kernel(info, k))
    names += (uint32_t)strlen(k) + 1;
  *r = (cg_prime_record){.kind = info->kind, .sm_arch = info->sm_arch, .hash = info->hash,
                         .size = info->size, .bytes = info->data, .n_kernels = info->n_kernels,
                         .names_len = names, .kernel_names = info->kernel_names, .hits = 1,
                         .first_ns = 1, .last_ns = 1, .module_loads = loads};
}

static void write_file(const cg_prime_record *recs, size_t n) {
  const char *path = getenv("CAPGUARD_PRIME");
  if (!path || cg_prime_add_records(path, recs, n, NULL, NULL)) {
    fprintf(stderr, "bench: cannot write the priming file (CAPGUARD_PRIME)\n");
    exit(2);
  }
}

static double begin_end(void) {
  CUgraph g;
  double t0 = now_ns();
  p_cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
  double t = now_ns() - t0;
  p_cuStreamEndCapture(stream, &g);
  if (g)
    p_cuGraphDestroy(g);
  return t;
}

static int preload(unsigned n, int cubin) {
  image *imgs = calloc(n, sizeof *imgs);
  cg_prime_record *recs = calloc(n, sizeof *recs);
  cg_image_info *infos = calloc(n, sizeof *infos);
  CUmodule *mods = calloc(n, sizeof *mods);
  for (unsigned i = 0; i < n; i++) {
    imgs[i] = make_ptx(i);
    if (cubin)
      imgs[i] = to_cubin(imgs[i]);
  }
  image warm = make_ptx(n + 1); /* the driver's own first-load costs, not counted */
  if (cubin)
    warm = to_cubin(warm);
  CUmodule wm;
  if (!p_cuModuleLoadData(&wm, warm.bytes))
    p_cuModuleUnload(wm);
  double t0 = now_ns();
  for (unsigned i = 0; i < n; i++)
    if (p_cuModuleLoadData(&mods[i], imgs[i].bytes)) {
      fprintf(stderr, "bench: the driver did not load image %u\n", i);
      return 2;
    }
  double driver = now_ns() - t0;
  for (unsigned i = 0; i < n; i++)
    p_cuModuleUnload(mods[i]);
  for (unsigned i = 0; i < n; i++)
    record_of(&imgs[i], 1, &recs[i], &infos[i]);
  write_file(recs, n);
  double first = begin_end(); /* capguard preloads all n here */
  double plain = begin_end();
  for (int k = 0; k < 8; k++) {
    double t = begin_end();
    plain = t < plain ? t : plain;
  }
  /* The driver's loads again, after the preload: a driver (the fake keeps
   * unloaded handles as tombstones) may get slower as it has seen more. */
  t0 = now_ns();
  for (unsigned i = 0; i < n; i++)
    p_cuModuleLoadData(&mods[i], imgs[i].bytes);
  double driver_after = now_ns() - t0;
  printf("images %u\nkind %s\nimage_bytes %zu\ndriver_loads_ns %.0f\ndriver_after_ns %.0f\npreload_ns %.0f\n"
         "ratio %.3f\nratio_after %.3f\n",
         n, cg_image_kind_name(infos[0].kind), imgs[0].size, driver, driver_after, first - plain,
         (first - plain) / driver, (first - plain) / driver_after);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int serve(unsigned k) {
  image img = make_ptx(7);
  cg_prime_record rec;
  cg_image_info info;
  record_of(&img, k, &rec, &info);
  write_file(&rec, 1);
  begin_end(); /* the preload: k modules */
  double *t = calloc(k, sizeof *t);
  CUgraph g;
  p_cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
  for (unsigned i = 0; i < k; i++) {
    CUmodule m;
    double t0 = now_ns();
    CUresult r = p_cuModuleLoadData(&m, img.bytes);
    t[i] = now_ns() - t0;
    if (r) {
      fprintf(stderr, "bench: load %u during capture failed (%d): not served?\n", i, (int)r);
      return 2;
    }
  }
  p_cuStreamEndCapture(stream, &g);
  /* The decision alone: what the shim does before it reports (inspect, which
   * hashes; find, which hashes again and compares the bytes). */
  cg_prime_set *set = NULL;
  if (cg_prime_load(getenv("CAPGUARD_PRIME"), &set, NULL, NULL))
    return 2;
  double *d = calloc(k, sizeof *d);
  for (unsigned i = 0; i < k; i++) {
    cg_image_info probe;
    double t0 = now_ns();
    cg_image_inspect(img.bytes, CG_IMAGE_MAX_BYTES, &probe);
    const cg_prime_record *found = cg_prime_find_hashed(set, probe.hash, probe.data, probe.size, NULL, 0);
    d[i] = now_ns() - t0;
    if (!found)
      return 2;
  }
  qsort(t, k, sizeof *t, cmp_double);
  qsort(d, k, sizeof *d, cmp_double);
  printf("serves %u\nserve_total_ns %.0f\nserve_decision_ns %.0f\nreport_ns %.0f\n", k, t[k / 2], d[k / 2],
         t[k / 2] - d[k / 2]);
  cg_prime_free(set);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "preload") && strcmp(argv[1], "serve"))) {
    fprintf(stderr, "usage: bench_preload preload N [--cubin] | bench_preload serve K\n");
    return 2;
  }
  unsigned n = (unsigned)atoi(argv[2]);
  if (!n)
    return 2;
  setup();
  return !strcmp(argv[1], "preload") ? preload(n, argc > 3 && !strcmp(argv[3], "--cubin")) : serve(n);
}
