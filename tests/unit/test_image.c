/* Unit tests of detect/image/image.c on real nvcc images (tests/data, see its
 * README) and on malformed variants made here. Every buffer handed to
 * cg_image_inspect ends exactly at a PROT_NONE guard page, so a read past the
 * limit crashes the test instead of passing silently. */
#include "capguard/image.h"
#include "capguard/image_params.h"
#include "capguard/mem_probe.h"

#include <check.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "check_run.h"
#include "image_fields.h"

/* ---- guarded buffers ---- */

typedef struct {
  unsigned char *base; /* mapping start */
  size_t map_len;      /* including the guard page */
  unsigned char *guard;
} guarded;

static guarded guarded_new(size_t capacity) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t body = (capacity + page - 1) / page * page;
  if (body == 0) body = page;
  guarded g;
  g.map_len = body + page;
  g.base = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(g.base, MAP_FAILED);
  g.guard = g.base + body;
  ck_assert_int_eq(mprotect(g.guard, page, PROT_NONE), 0);
  return g;
}

static void guarded_free(guarded *g) { munmap(g->base, g->map_len); }

/* Copies n bytes so that they end right at the guard page; returns their start. */
static unsigned char *at_guard(guarded *g, const void *src, size_t n) {
  ck_assert_uint_le(n, (size_t)(g->guard - g->base));
  unsigned char *p = g->guard - n;
  if (n) memcpy(p, src, n);
  return p;
}

/* ---- test data ---- */

typedef struct {
  unsigned char *bytes;
  size_t size;
} blob;

static blob load(const char *name) {
  const char *dir = getenv("CG_TEST_DATA");
  ck_assert_msg(dir != NULL, "CG_TEST_DATA is not set");
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  ck_assert_int_gt(n, 0);
  fseek(f, 0, SEEK_SET);
  blob b = {malloc((size_t)n), (size_t)n};
  ck_assert_ptr_nonnull(b.bytes);
  ck_assert_uint_eq(fread(b.bytes, 1, b.size, f), b.size);
  fclose(f);
  return b;
}

static const char *const all_samples[] = {
    "kernels_sm80.cubin",       "kernels_sm90.cubin",      "kernels_multi.fatbin", "kernels_multi_plain.fatbin",
    "kernels_multi_zstd.fatbin", "kernels_multi_lz4.fatbin", "kernels_sm90.ptx",
};
#define N_SAMPLES (sizeof all_samples / sizeof all_samples[0])

/* ---- little helpers to poke at headers of known-good images (and get, put:
 * image_fields.h) ---- */

/* Offset of section header i of an ELF64 image. */
static size_t shdr(const unsigned char *elf, unsigned i) { return (size_t)get(elf, 40, 8) + 64u * i; }
static unsigned find_section(const unsigned char *elf, uint32_t type) {
  unsigned n = (unsigned)get(elf, 60, 2);
  for (unsigned i = 0; i < n; i++)
    if (get(elf, shdr(elf, i) + 4, 4) == type) return i;
  ck_abort_msg("no section of type %u", type);
  return 0;
}

/* Asserts the inspector rejects the n bytes at src, placed at a guard page. */
static void expect_reject(const void *src, size_t n, const char *what) {
  guarded g = guarded_new(n);
  cg_image_info info;
  memset(&info, 0x5a, sizeof info);
  int rc = cg_image_inspect(at_guard(&g, src, n), n, &info);
  ck_assert_msg(rc == -1, "%s: accepted (kind %s, size %zu)", what, cg_image_kind_name(info.kind), info.size);
  ck_assert_int_eq(info.kind, CG_IMAGE_UNKNOWN);
  ck_assert_ptr_nonnull(info.why_unknown);
  ck_assert_uint_gt(strlen(info.why_unknown), 0);
  ck_assert_uint_eq(info.n_kernels, 0);
  guarded_free(&g);
}

static int inspect_guarded(const blob *b, cg_image_info *info, guarded *g) {
  *g = guarded_new(b->size);
  return cg_image_inspect(at_guard(g, b->bytes, b->size), b->size, info);
}

/* Exactly the two extern "C" kernels of kernels.cu, in any order, and not the helper. */
static void expect_two_kernels(const cg_image_info *info) {
  ck_assert_uint_eq(info->n_kernels, 2);
  ck_assert(!info->names_truncated);
  int axpy = 0, fill = 0, n = 0;
  for (const char *k = cg_image_first_kernel(info); k; k = cg_image_next_kernel(info, k)) {
    n++;
    axpy += strcmp(k, "cg_test_axpy") == 0;
    fill += strcmp(k, "cg_test_fill") == 0;
    ck_assert_msg(strstr(k, "helper") == NULL, "device helper %s listed as a kernel", k);
  }
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(axpy, 1);
  ck_assert_int_eq(fill, 1);
}

static void expect_hash_of(const cg_image_info *info, const blob *b) {
  XXH128_hash_t h = XXH3_128bits(b->bytes, b->size);
  ck_assert_uint_eq(info->hash.hi, h.high64);
  ck_assert_uint_eq(info->hash.lo, h.low64);
}

/* ---- recognising the real images ---- */

static void check_cubin(const char *name, unsigned arch) {
  blob b = load(name);
  guarded g;
  cg_image_info info;
  ck_assert_int_eq(inspect_guarded(&b, &info, &g), 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_CUBIN);
  ck_assert_str_eq(cg_image_kind_name(info.kind), "cubin");
  ck_assert_ptr_eq(info.data, g.guard - b.size);
  ck_assert_uint_eq(info.size, b.size);
  ck_assert_uint_eq(info.sm_arch, arch);
  ck_assert_uint_eq(info.n_archs, 1);
  ck_assert_uint_eq(info.archs[0], arch);
  ck_assert(!info.has_ptx);
  ck_assert_ptr_null(info.why_unknown);
  expect_two_kernels(&info);
  expect_hash_of(&info, &b);
  guarded_free(&g);
  free(b.bytes);
}

START_TEST(cubin_sm80) { check_cubin("kernels_sm80.cubin", 80); }
END_TEST
START_TEST(cubin_sm90) { check_cubin("kernels_sm90.cubin", 90); }
END_TEST

/* A kernel's parameter layout from the cubin's own table (nvcc 13.0, kernels.cu):
 * cg_test_fill(float *y, float v, int n), cg_test_axpy(float a, const float *x,
 * float *y, int n); a kernel the image lacks, a truncated table and a fatbin: -1. */
static void expect_params(const cg_image_info *info, const char *kernel, int n, const unsigned want[][2]) {
  cg_param_slot p[8];
  ck_assert_int_eq(cg_image_kernel_params(info, kernel, p, 8), n);
  for (int i = 0; i < n; i++) {
    ck_assert_uint_eq(p[i].offset, want[i][0]);
    ck_assert_uint_eq(p[i].size, want[i][1]);
  }
}

START_TEST(kernel_params_from_the_cubin) {
  static const unsigned fill[][2] = {{0, 8}, {8, 4}, {12, 4}};
  static const unsigned axpy[][2] = {{0, 4}, {8, 8}, {16, 8}, {24, 4}};
  for (int f = 0; f < 2; f++) {
    blob b = load(f ? "kernels_sm80.cubin" : "kernels_sm90.cubin");
    guarded g;
    cg_image_info info;
    ck_assert_int_eq(inspect_guarded(&b, &info, &g), 0);
    expect_params(&info, "cg_test_fill", 3, fill);
    expect_params(&info, "cg_test_axpy", 4, axpy);
    cg_param_slot p[8];
    ck_assert_int_eq(cg_image_kernel_params(&info, "cg_test_fil", p, 8), -1);
    ck_assert_int_eq(cg_image_kernel_params(&info, "cg_test_fill", p, 2), -1); /* more than max */
    cg_image_info cut = info;
    cut.size = info.size / 2; /* the section table past the end: nothing read there */
    ck_assert_int_eq(cg_image_kernel_params(&cut, "cg_test_fill", p, 8), -1);
    guarded_free(&g);
    free(b.bytes);
  }
  blob fb = load("kernels_multi.fatbin");
  guarded g;
  cg_image_info info;
  ck_assert_int_eq(inspect_guarded(&fb, &info, &g), 0);
  cg_param_slot p[8];
  ck_assert_int_eq(cg_image_kernel_params(&info, "cg_test_fill", p, 8), -1);
  guarded_free(&g);
  free(fb.bytes);
}
END_TEST

/* The size comes from the headers, not the limit: trailing bytes are not the image's. */
START_TEST(size_ignores_trailing_bytes) {
  for (size_t s = 0; s < N_SAMPLES; s++) {
    blob b = load(all_samples[s]);
    size_t n = b.size + 777;
    unsigned char *tmp = malloc(n);
    memcpy(tmp, b.bytes, b.size);
    for (size_t i = b.size; i < n; i++) tmp[i] = (unsigned char)(i * 37 + 11);
    guarded g = guarded_new(n);
    cg_image_info info;
    ck_assert_int_eq(cg_image_inspect(at_guard(&g, tmp, n), n, &info), 0);
    ck_assert_msg(info.size == b.size, "%s: size %zu, file %zu", all_samples[s], info.size, b.size);
    expect_hash_of(&info, &b);
    /* and the same image under the "pointer only" limit the shim uses */
    ck_assert_int_eq(cg_image_inspect(g.guard - n, CG_IMAGE_MAX_BYTES, &info), 0);
    ck_assert_uint_eq(info.size, b.size);
    guarded_free(&g);
    free(tmp);
    free(b.bytes);
  }
}
END_TEST

static void check_fatbin(const char *name, bool names_expected) {
  blob b = load(name);
  guarded g;
  cg_image_info info;
  ck_assert_int_eq(inspect_guarded(&b, &info, &g), 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_FATBIN);
  ck_assert_str_eq(cg_image_kind_name(info.kind), "fatbin");
  ck_assert_uint_eq(info.size, b.size);
  ck_assert_uint_eq(info.sm_arch, 90);
  ck_assert_uint_eq(info.n_archs, 2);
  ck_assert_uint_eq(info.archs[0], 80);
  ck_assert_uint_eq(info.archs[1], 90);
  ck_assert(info.has_ptx);
  /* the arch a device runs it as: its major's highest SASS not above it
   * (sm_90 on sm_90, not the highest overall; sm_80 on sm_86), else the PTX
   * compiled for the device (sm_100, sm_75: no SASS of their major fits) */
  ck_assert_uint_eq(info.n_sass_archs, 2);
  ck_assert_uint_eq(cg_image_arch_on(&info, 90), 90);
  ck_assert_uint_eq(cg_image_arch_on(&info, 80), 80);
  ck_assert_uint_eq(cg_image_arch_on(&info, 86), 80);
  ck_assert_uint_eq(cg_image_arch_on(&info, 89), 80);
  ck_assert_uint_eq(cg_image_arch_on(&info, 100), 100); /* compute_90 PTX compiled for sm_100 */
  ck_assert_uint_eq(cg_image_arch_on(&info, 75), 90);   /* nothing runs on sm_75: the highest */
  ck_assert_uint_eq(cg_image_arch_on(&info, 0), 90);
  if (names_expected) {
    expect_two_kernels(&info);
  } else {
    ck_assert_uint_eq(info.n_kernels, 0); /* compressed: names unavailable, not an error */
    ck_assert_ptr_null(cg_image_first_kernel(&info));
  }
  expect_hash_of(&info, &b);
  guarded_free(&g);
  free(b.bytes);
}

START_TEST(fatbin_default) { check_fatbin("kernels_multi.fatbin", true); }
END_TEST
START_TEST(fatbin_plain) { check_fatbin("kernels_multi_plain.fatbin", true); }
END_TEST
START_TEST(fatbin_zstd) { check_fatbin("kernels_multi_zstd.fatbin", false); }
END_TEST
START_TEST(fatbin_lz4) { check_fatbin("kernels_multi_lz4.fatbin", false); }
END_TEST

/* Rebuilds a fatbin holding only the entries of `kind` of the given one. */
static size_t fatbin_only(const blob *b, unsigned kind, unsigned char *out) {
  size_t hdr = (size_t)get(b->bytes, 6, 2), total = hdr + (size_t)get(b->bytes, 8, 8), o = hdr;
  memcpy(out, b->bytes, hdr);
  for (size_t off = hdr; off < total;) {
    size_t len = (size_t)get(b->bytes, off + 4, 4) + (size_t)get(b->bytes, off + 8, 8);
    if (get(b->bytes, off, 2) == kind) {
      memcpy(out + o, b->bytes + off, len);
      o += len;
    }
    off += len;
  }
  put(out, 8, 8, o - hdr);
  return o;
}

/* Kernel names of a fatbin's uncompressed PTX entry, with no ELF entry to supply them. */
START_TEST(fatbin_ptx_entry_names) {
  blob b = load("kernels_multi_plain.fatbin");
  unsigned char *only = malloc(b.size);
  size_t n = fatbin_only(&b, 1, only);
  ck_assert_uint_lt(n, b.size);
  guarded g = guarded_new(n);
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(at_guard(&g, only, n), n, &info), 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_FATBIN);
  ck_assert_uint_eq(info.size, n);
  ck_assert_uint_eq(info.sm_arch, 0); /* no SASS */
  ck_assert(info.has_ptx);
  ck_assert_uint_eq(info.n_archs, 1);
  ck_assert_uint_eq(info.archs[0], 90);
  expect_two_kernels(&info);
  guarded_free(&g);
  free(only);
  free(b.bytes);
}
END_TEST

START_TEST(ptx_file) {
  blob b = load("kernels_sm90.ptx");
  ck_assert_int_eq(b.bytes[b.size - 1], 0); /* README: a NUL was appended */
  guarded g;
  cg_image_info info;
  ck_assert_int_eq(inspect_guarded(&b, &info, &g), 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_PTX);
  ck_assert_str_eq(cg_image_kind_name(info.kind), "ptx");
  ck_assert_uint_eq(info.size, b.size);
  ck_assert_uint_eq(info.sm_arch, 90);
  ck_assert_uint_eq(info.n_archs, 1);
  expect_two_kernels(&info);
  expect_hash_of(&info, &b);
  guarded_free(&g);
  free(b.bytes);
}
END_TEST

static void inspect_text(const char *text, cg_image_info *info, int want_rc) {
  size_t n = strlen(text) + 1;
  guarded g = guarded_new(n);
  ck_assert_int_eq(cg_image_inspect(at_guard(&g, text, n), n, info), want_rc);
  if (want_rc == 0) ck_assert_uint_eq(info->size, n);
  guarded_free(&g);
}

START_TEST(ptx_syntax_variants) {
  cg_image_info info;
  inspect_text("/* block\n comment .entry fake1 */ // .entry fake2\n"
               "  .version 8.4\n.target sm_90a, debug\n.address_size 64\n"
               ".file 1 \"/src/my.entry notakernel.cu\"\n"
               ".weak .entry k_weak(\n.param .u64 p\n)\n{ ret; }\n"
               ".entry k_plain\n{ ret; }\n"
               ".extern .entry k_extern();\n"
               ".visible .func (.param .b32 r) not_entry(.param .b32 a) { ret; }\n"
               ".entry k_plain() { ret; }\n",
               &info, 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_PTX);
  ck_assert_uint_eq(info.sm_arch, 90);
  ck_assert_uint_eq(info.n_kernels, 3); /* k_plain once despite two .entry */
  const char *k = cg_image_first_kernel(&info);
  ck_assert_str_eq(k, "k_weak");
  ck_assert_str_eq(k = cg_image_next_kernel(&info, k), "k_plain");
  ck_assert_str_eq(k = cg_image_next_kernel(&info, k), "k_extern");
  ck_assert_ptr_null(cg_image_next_kernel(&info, k));

  inspect_text(".version 9.0\n.target sm_100\n", &info, 0);
  ck_assert_uint_eq(info.sm_arch, 100);
  ck_assert_uint_eq(info.n_kernels, 0);

  inspect_text("hello .version 9.0\n.entry k() {}\n", &info, -1); /* text before .version */
  inspect_text(".target sm_90\n.version 9.0\n", &info, -1);        /* .version must come first */
  inspect_text(".versionX 9.0\n", &info, -1);
  inspect_text("// only a comment\n", &info, -1);
  inspect_text("", &info, -1);
}
END_TEST

/* A PTX text whose NUL lies past the limit must be refused, not overread. */
START_TEST(ptx_unterminated) {
  blob b = load("kernels_sm90.ptx");
  expect_reject(b.bytes, b.size - 1, "PTX without its NUL");
  const char *t = ".version 9.0\n.target sm_90\n.entry k() { ret; }\n";
  expect_reject(t, strlen(t), "short PTX without NUL");
  free(b.bytes);
}
END_TEST

START_TEST(names_truncated) {
  /* 600 distinct 20-byte names need 12 KB: more than kernel_names holds. */
  size_t cap = 64 * 1024, n = 0;
  char *t = malloc(cap);
  n += (size_t)snprintf(t + n, cap - n, ".version 9.0\n.target sm_90\n");
  for (int i = 0; i < 600; i++) n += (size_t)snprintf(t + n, cap - n, ".entry kernel_number_%05d() { ret; }\n", i);
  cg_image_info info;
  inspect_text(t, &info, 0);
  ck_assert(info.names_truncated);
  ck_assert_uint_gt(info.n_kernels, 100);
  ck_assert_uint_lt(info.n_kernels, 600);
  unsigned seen = 0;
  for (const char *k = cg_image_first_kernel(&info); k; k = cg_image_next_kernel(&info, k)) {
    char want[32];
    snprintf(want, sizeof want, "kernel_number_%05u", seen);
    ck_assert_str_eq(k, want);
    ck_assert(k >= info.kernel_names);
    ck_assert(k + strlen(k) < info.kernel_names + sizeof info.kernel_names);
    seen++;
  }
  ck_assert_uint_eq(seen, info.n_kernels);
  free(t);
}
END_TEST

/* ---- fatbin wrapper ---- */

typedef struct {
  uint32_t magic, version;
  const void *data;
  const void *filename_or_fatbins;
} wrapper;

START_TEST(fatbin_wrapper) {
  blob b = load("kernels_multi.fatbin");
  guarded gf = guarded_new(b.size), gw = guarded_new(sizeof(wrapper));
  const unsigned char *fat = at_guard(&gf, b.bytes, b.size);
  wrapper w = {0x466243B1u, 1, fat, NULL};
  const unsigned char *wp = at_guard(&gw, &w, sizeof w);
  cg_image_info info;

  /* The shim only has the pointer: it follows the wrapper. */
  ck_assert_int_eq(cg_image_inspect(wp, CG_IMAGE_MAX_BYTES, &info), 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_FATBIN);
  ck_assert_ptr_eq(info.data, fat);
  ck_assert_uint_eq(info.size, b.size);
  ck_assert_uint_eq(info.sm_arch, 90);
  expect_two_kernels(&info);
  expect_hash_of(&info, &b);

  /* With a known bound, a fatbin outside it is refused, not read. */
  ck_assert_int_eq(cg_image_inspect(wp, sizeof w, &info), -1);
  ck_assert_int_eq(info.kind, CG_IMAGE_UNKNOWN);
  ck_assert_ptr_nonnull(info.why_unknown);

  /* Wrapper followed by its fatbin in one bounded buffer: fine. */
  size_t n = sizeof w + b.size;
  unsigned char *both = malloc(n);
  guarded gb = guarded_new(n);
  unsigned char *dst = gb.guard - n;
  wrapper w2 = {0x466243B1u, 1, dst + sizeof w, NULL};
  memcpy(both, &w2, sizeof w2);
  memcpy(both + sizeof w, b.bytes, b.size);
  ck_assert_ptr_eq(at_guard(&gb, both, n), dst);
  ck_assert_int_eq(cg_image_inspect(dst, n, &info), 0);
  ck_assert_ptr_eq(info.data, dst + sizeof w);
  ck_assert_uint_eq(info.size, b.size);
  /* ... but not when the bound cuts the fatbin short. */
  ck_assert_int_eq(cg_image_inspect(dst, n - 1, &info), -1);

  /* Null or non-fatbin targets, truncated wrappers. */
  wrapper wn = {0x466243B1u, 1, NULL, NULL};
  expect_reject(&wn, sizeof wn, "wrapper with null data");
  blob c = load("kernels_sm90.cubin");
  guarded gc = guarded_new(c.size);
  wrapper wc = {0x466243B1u, 1, at_guard(&gc, c.bytes, c.size), NULL};
  wp = at_guard(&gw, &wc, sizeof wc);
  ck_assert_int_eq(cg_image_inspect(wp, CG_IMAGE_MAX_BYTES, &info), -1);
  for (size_t k = 0; k < sizeof w; k++) expect_reject(&w, k, "truncated wrapper");

  guarded_free(&gc);
  guarded_free(&gb);
  guarded_free(&gw);
  guarded_free(&gf);
  free(both);
  free(c.bytes);
  free(b.bytes);
}
END_TEST

/* ---- malformed images ---- */

/* Every proper prefix of every sample is refused (its headers claim more),
 * and none is read past its end. */
START_TEST(every_truncation) {
  for (size_t s = 0; s < N_SAMPLES; s++) {
    blob b = load(all_samples[s]);
    guarded g = guarded_new(b.size);
    cg_image_info info;
    for (size_t n = 0; n < b.size; n++) {
      int rc = cg_image_inspect(at_guard(&g, b.bytes, n), n, &info);
      ck_assert_msg(rc == -1, "%s truncated to %zu accepted as %s", all_samples[s], n, cg_image_kind_name(info.kind));
      ck_assert_int_eq(info.kind, CG_IMAGE_UNKNOWN);
      ck_assert_ptr_nonnull(info.why_unknown);
    }
    ck_assert_int_eq(cg_image_inspect(at_guard(&g, b.bytes, b.size), b.size, &info), 0);
    guarded_free(&g);
    free(b.bytes);
  }
}
END_TEST

typedef void (*corrupt_fn)(unsigned char *img);

static void expect_corruption_rejected(const char *sample, corrupt_fn fn, const char *what) {
  blob b = load(sample);
  fn(b.bytes);
  expect_reject(b.bytes, b.size, what);
  free(b.bytes);
}

static void shoff_past_end(unsigned char *e) { put(e, 40, 8, 1u << 20); }
static void phoff_past_end(unsigned char *e) { put(e, 32, 8, 1u << 20); }
static void shoff_overflow(unsigned char *e) { put(e, 40, 8, UINT64_MAX - 100); }
static void phoff_overflow(unsigned char *e) { put(e, 32, 8, UINT64_MAX - 100); }
static void huge_shnum(unsigned char *e) { put(e, 60, 2, 0xffff); }
static void huge_phnum(unsigned char *e) { put(e, 56, 2, 0xffff); }
static void bad_shentsize(unsigned char *e) { put(e, 58, 2, 40); }
static void bad_phentsize(unsigned char *e) { put(e, 54, 2, 32); }
static void extended_shnum(unsigned char *e) { put(e, 60, 2, 0); }
static void section_offset_past_end(unsigned char *e) { put(e, shdr(e, 4) + 24, 8, 1u << 20); }
static void section_size_past_end(unsigned char *e) { put(e, shdr(e, 4) + 32, 8, 1u << 20); }
static void section_offset_overflow(unsigned char *e) {
  put(e, shdr(e, 4) + 24, 8, UINT64_MAX - 8);
  put(e, shdr(e, 4) + 32, 8, 64);
}
static void section_size_overflow(unsigned char *e) { put(e, shdr(e, 4) + 32, 8, UINT64_MAX - 8); }
static void symtab_entsize(unsigned char *e) { put(e, shdr(e, find_section(e, 2)) + 56, 8, 16); }
static void symtab_link_out_of_range(unsigned char *e) { put(e, shdr(e, find_section(e, 2)) + 40, 4, 0xffff); }
static void symtab_link_not_strtab(unsigned char *e) { put(e, shdr(e, find_section(e, 2)) + 40, 4, 4); }
/* Points every symbol's name at the last byte of .strtab and clears that
 * byte: no name can find its NUL inside the table. */
static void names_unterminated(unsigned char *e) {
  size_t st = shdr(e, find_section(e, 2));
  size_t str = shdr(e, (unsigned)get(e, st + 40, 4));
  uint64_t strsz = get(e, str + 32, 8);
  e[get(e, str + 24, 8) + strsz - 1] = 'x';
  for (uint64_t i = 0; i < get(e, st + 32, 8) / 24; i++) put(e, get(e, st + 24, 8) + 24 * i, 4, strsz - 1);
}
static void names_outside_strtab(unsigned char *e) {
  size_t st = shdr(e, find_section(e, 2));
  for (uint64_t i = 0; i < get(e, st + 32, 8) / 24; i++) put(e, get(e, st + 24, 8) + 24 * i, 4, 0x7fffffff);
}
static void elf32(unsigned char *e) { e[4] = 1; }
static void big_endian(unsigned char *e) { e[5] = 2; }
static void not_cuda(unsigned char *e) { put(e, 18, 2, 62); }

START_TEST(cubin_corruptions) {
  static const struct {
    corrupt_fn fn;
    const char *what;
  } cases[] = {
      {shoff_past_end, "e_shoff past end"},
      {phoff_past_end, "e_phoff past end"},
      {shoff_overflow, "e_shoff + table overflows"},
      {phoff_overflow, "e_phoff + table overflows"},
      {huge_shnum, "huge e_shnum"},
      {huge_phnum, "huge e_phnum"},
      {bad_shentsize, "bad e_shentsize"},
      {bad_phentsize, "bad e_phentsize"},
      {extended_shnum, "e_shnum 0 with a table"},
      {section_offset_past_end, "section offset past end"},
      {section_size_past_end, "section size past end"},
      {section_offset_overflow, "section offset+size overflows"},
      {section_size_overflow, "section size overflows"},
      {symtab_entsize, "symtab entsize"},
      {symtab_link_out_of_range, "symtab sh_link out of range"},
      {symtab_link_not_strtab, "symtab sh_link not a strtab"},
      {names_unterminated, "symbol names without NUL"},
      {names_outside_strtab, "symbol names outside strtab"},
      {elf32, "ELF32"},
      {big_endian, "big-endian ELF"},
      {not_cuda, "x86-64 ELF"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    expect_corruption_rejected("kernels_sm90.cubin", cases[i].fn, cases[i].what);
    expect_corruption_rejected("kernels_sm80.cubin", cases[i].fn, cases[i].what);
  }
}
END_TEST

/* ELF ABI < 8 (OSABI 0x33, CUDA <= 11) kept the SM in the low byte of e_flags. */
START_TEST(cubin_old_abi_arch) {
  blob b = load("kernels_sm90.cubin");
  b.bytes[7] = 0x33;
  b.bytes[8] = 7;
  put(b.bytes, 48, 4, 0x00560056); /* sm_86 in the old layout */
  guarded g;
  cg_image_info info;
  ck_assert_int_eq(inspect_guarded(&b, &info, &g), 0);
  ck_assert_uint_eq(info.sm_arch, 86);
  guarded_free(&g);
  free(b.bytes);
}
END_TEST

/* Offset of the idx-th entry header of a fatbin. */
static size_t fat_entry(const unsigned char *f, int idx) {
  size_t off = (size_t)get(f, 6, 2);
  for (int i = 0; i < idx; i++) off += (size_t)get(f, off + 4, 4) + (size_t)get(f, off + 8, 8);
  return off;
}

/* LZ4-compressed entries (nvcc -compress-mode=speed): unnamed without room,
 * and unpack_room says how much room (the largest ELF entry, 6184 bytes);
 * named from the decompressed ELF with it; a payload that does not decode,
 * or too little room, leaves them unnamed and the image still known. */
START_TEST(fatbin_lz4_names_with_scratch) {
  blob b = load("kernels_multi_lz4.fatbin");
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(b.bytes, b.size, &info), 0);
  ck_assert_uint_eq(info.n_kernels, 0);
  ck_assert_uint_eq(info.unpack_room, 6184);
  static unsigned char scratch[8192];
  ck_assert_int_eq(cg_image_inspect_with(b.bytes, b.size, &info, scratch, sizeof scratch), 0);
  expect_two_kernels(&info);
  ck_assert_uint_eq(info.unpack_room, 0);
  ck_assert_int_eq(cg_image_inspect_with(b.bytes, b.size, &info, scratch, 5000), 0);
  ck_assert_uint_eq(info.n_kernels, 0); /* the ELF entries take 5224 and 6184 bytes */
  ck_assert_uint_eq(info.unpack_room, 6184);
  /* a damaged block: every byte of the first entry's payload after its first 100 set to 0xff */
  size_t e0 = fat_entry(b.bytes, 0), pl = e0 + (size_t)get(b.bytes, e0 + 4, 4);
  memset(b.bytes + pl + 100, 0xff, (size_t)get(b.bytes, e0 + 0x10, 4) - 100);
  ck_assert_int_eq(cg_image_inspect_with(b.bytes, b.size, &info, scratch, sizeof scratch), 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_FATBIN);
  free(b.bytes);
  /* zstd with this little scratch stays unnamed (its room counts the
   * decoder's tables too: test_image_zstd.c names it) */
  b = load("kernels_multi_zstd.fatbin");
  ck_assert_int_eq(cg_image_inspect_with(b.bytes, b.size, &info, scratch, sizeof scratch), 0);
  ck_assert_uint_eq(info.n_kernels, 0);
  free(b.bytes);
}
END_TEST

/* A fatbin like torch's: SASS for sm_120 as well as sm_90 (the zstd one's
 * first entry, compressed so that its ELF is not read, relabelled 120). On an
 * H100 the driver runs the sm_90 entry: that, not the highest, is the arch. */
START_TEST(fatbin_arch_on_device) {
  blob b = load("kernels_multi_zstd.fatbin");
  put(b.bytes, fat_entry(b.bytes, 0) + 0x1C, 4, 120);
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(b.bytes, b.size, &info), 0);
  ck_assert_uint_eq(info.sm_arch, 120);
  ck_assert_uint_eq(cg_image_arch_on(&info, 90), 90);
  ck_assert_uint_eq(cg_image_arch_on(&info, 120), 120);
  ck_assert_uint_eq(cg_image_arch_on(&info, 121), 120);
  ck_assert_uint_eq(info.ptx_arch, 90);
  ck_assert_uint_eq(cg_image_arch_on(&info, 80), 120); /* no sm_8x SASS, PTX only for 90: none runs */
  free(b.bytes);
}
END_TEST

static void fat_size_huge(unsigned char *f) { put(f, 8, 8, UINT64_MAX - 4); }
static void fat_size_short(unsigned char *f) { put(f, 8, 8, get(f, 8, 8) - 1); }
static void fat_size_long(unsigned char *f) { put(f, 8, 8, get(f, 8, 8) + 1); }
static void fat_header_small(unsigned char *f) { put(f, 6, 2, 8); }
static void entry_header_zero(unsigned char *f) { put(f, fat_entry(f, 1) + 4, 4, 0); }
static void entry_header_small(unsigned char *f) { put(f, fat_entry(f, 1) + 4, 4, 0x20); }
static void entry_header_huge(unsigned char *f) { put(f, fat_entry(f, 1) + 4, 4, 0xffffffffu); }
static void entry_payload_huge(unsigned char *f) { put(f, fat_entry(f, 1) + 8, 8, UINT64_MAX - 40); }
static void entry_payload_long(unsigned char *f) { put(f, fat_entry(f, 2) + 8, 8, get(f, fat_entry(f, 2) + 8, 8) + 8); }
static void entry_payload_short(unsigned char *f) { put(f, fat_entry(f, 0) + 8, 8, get(f, fat_entry(f, 0) + 8, 8) - 8); }
static void embedded_elf_shoff(unsigned char *f) {
  size_t e = fat_entry(f, 0) + (size_t)get(f, fat_entry(f, 0) + 4, 4);
  put(f, e + 40, 8, 1u << 30);
}
static void embedded_elf_magic(unsigned char *f) {
  size_t e = fat_entry(f, 0) + (size_t)get(f, fat_entry(f, 0) + 4, 4);
  f[e + 1] = 'X';
}
static void embedded_ptx_garbage(unsigned char *f) {
  size_t e = fat_entry(f, 1) + (size_t)get(f, fat_entry(f, 1) + 4, 4);
  memset(f + e, 'Z', 16);
}

START_TEST(fatbin_corruptions) {
  static const struct {
    corrupt_fn fn;
    const char *what;
  } cases[] = {
      {fat_size_huge, "fat_size overflows"},
      {fat_size_short, "fat_size cuts the last entry"},
      {fat_size_long, "fat_size past end"},
      {fat_header_small, "header_size < 16"},
      {entry_header_zero, "entry header size 0"},
      {entry_header_small, "entry header size too small"},
      {entry_header_huge, "entry header size huge"},
      {entry_payload_huge, "entry payload size overflows"},
      {entry_payload_long, "last entry payload past end"},
      {entry_payload_short, "entry payload short: next header misplaced"},
      {embedded_elf_shoff, "embedded ELF with bad e_shoff"},
      {embedded_elf_magic, "ELF entry without ELF magic"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    expect_corruption_rejected("kernels_multi.fatbin", cases[i].fn, cases[i].what);
    expect_corruption_rejected("kernels_multi_plain.fatbin", cases[i].fn, cases[i].what);
  }
  expect_corruption_rejected("kernels_multi_plain.fatbin", embedded_ptx_garbage, "PTX entry not PTX");
}
END_TEST

/* More distinct archs than archs[] holds: capped, no overflow. */
START_TEST(fatbin_many_archs) {
  unsigned char f[16 + 20 * 64];
  memset(f, 0, sizeof f);
  put(f, 0, 4, 0xBA55ED50u);
  put(f, 4, 2, 1);
  put(f, 6, 2, 16);
  put(f, 8, 8, 20 * 64);
  for (unsigned i = 0; i < 20; i++) {
    unsigned char *e = f + 16 + 64 * i;
    put(e, 0, 2, 8); /* LTO-IR: counted, not parsed */
    put(e, 4, 4, 64);
    put(e, 0x1C, 4, 50 + i);
  }
  guarded g = guarded_new(sizeof f);
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(at_guard(&g, f, sizeof f), sizeof f, &info), 0);
  ck_assert_uint_eq(info.n_archs, CG_IMAGE_MAX_ARCHS);
  for (unsigned i = 0; i < CG_IMAGE_MAX_ARCHS; i++) ck_assert_uint_eq(info.archs[i], 50 + i);
  ck_assert_uint_eq(info.sm_arch, 0);
  ck_assert(!info.has_ptx);
  ck_assert_uint_eq(info.size, sizeof f);
  guarded_free(&g);
}
END_TEST

/* ---- random input ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) { /* splitmix64: deterministic, so failures replay */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Whatever comes back must describe bytes inside the buffer. */
static void check_sane(const unsigned char *p, size_t n, int rc, const cg_image_info *info) {
  if (rc != 0) {
    ck_assert_int_eq(info->kind, CG_IMAGE_UNKNOWN);
    ck_assert_ptr_nonnull(info->why_unknown);
    return;
  }
  ck_assert_int_ne(info->kind, CG_IMAGE_UNKNOWN);
  ck_assert_ptr_eq(info->data, p);
  ck_assert_uint_le(info->size, n);
  ck_assert_uint_le(info->n_archs, CG_IMAGE_MAX_ARCHS);
  unsigned count = 0;
  for (const char *k = cg_image_first_kernel(info); k; k = cg_image_next_kernel(info, k)) {
    ck_assert(k >= info->kernel_names);
    ck_assert(k + strlen(k) < info->kernel_names + sizeof info->kernel_names);
    count++;
  }
  ck_assert_uint_eq(count, info->n_kernels);
}

START_TEST(random_garbage) {
  static const char *const prefixes[] = {"", "\177ELF\002\001\001A", "\x50\xed\x55\xba", ".version 9.0\n",
                                         "\xb1\x43\x62\x46"};
  guarded g = guarded_new(8192);
  unsigned char buf[8192];
  cg_image_info info;
  for (int iter = 0; iter < 20000; iter++) {
    size_t n = (size_t)(rng() % sizeof buf);
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)rng();
    const char *pre = prefixes[iter % 5];
    size_t pl = strlen(pre);
    if (pl <= n) memcpy(buf, pre, pl);
    unsigned char *p = at_guard(&g, buf, n);
    check_sane(p, n, cg_image_inspect(p, n, &info), &info);
  }
  guarded_free(&g);
}
END_TEST

/* Random byte overwrites of the real images: anything may come back, but
 * nothing outside the buffer may be read or described. */
START_TEST(random_mutations) {
  for (size_t s = 0; s < N_SAMPLES; s++) {
    blob b = load(all_samples[s]);
    unsigned char *m = malloc(b.size);
    guarded g = guarded_new(b.size);
    cg_image_info info;
    for (int iter = 0; iter < 3000; iter++) {
      memcpy(m, b.bytes, b.size);
      int flips = 1 + (int)(rng() % 8);
      for (int k = 0; k < flips; k++) {
        /* mostly hit the headers, where the offsets live */
        size_t at = (size_t)(rng() % (rng() % 2 ? 256 : b.size)) % b.size;
        m[at] = (unsigned char)rng();
      }
      size_t n = rng() % 4 ? b.size : (size_t)(rng() % b.size);
      unsigned char *p = at_guard(&g, m, n);
      check_sane(p, n, cg_image_inspect(p, n, &info), &info);
    }
    guarded_free(&g);
    free(m);
    free(b.bytes);
  }
}
END_TEST

/* ---- small API pieces ---- */

START_TEST(bad_arguments) {
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(NULL, 100, &info), -1);
  ck_assert_int_eq(info.kind, CG_IMAGE_UNKNOWN);
  ck_assert_ptr_nonnull(info.why_unknown);
  ck_assert_int_eq(cg_image_inspect("x", 1, NULL), -1);
  ck_assert_str_eq(cg_image_kind_name(CG_IMAGE_UNKNOWN), "unknown");
  ck_assert_str_eq(cg_image_kind_name((cg_image_kind)42), "unknown");
  memset(&info, 0, sizeof info);
  ck_assert_ptr_null(cg_image_first_kernel(&info));
  ck_assert_ptr_null(cg_image_first_kernel(NULL));
  ck_assert_ptr_null(cg_image_next_kernel(&info, NULL));
  ck_assert_ptr_null(cg_image_next_kernel(&info, "not inside info"));
}
END_TEST

/* A hash as 32 hex digits, read back (what cg_hash_format writes): 0 on success. */
static int hash_parse(const char *s, cg_hash128 *out) {
  /* the length first: a shorter string is never read past its end */
  if (!s || !out || strnlen(s, 33) != 32) return -1;
  uint64_t v[2] = {0, 0};
  for (int i = 0; i < 32; i++) {
    char c = s[i];
    unsigned d;
    if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
    else return -1; /* also stops at an early NUL */
    v[i / 16] = v[i / 16] << 4 | d;
  }
  out->hi = v[0];
  out->lo = v[1];
  return 0;
}

START_TEST(hash_roundtrip) {
  const char *msg = "capguard";
  cg_hash128 h = cg_hash_bytes(msg, strlen(msg));
  XXH128_hash_t x = XXH3_128bits(msg, strlen(msg));
  ck_assert_uint_eq(h.hi, x.high64);
  ck_assert_uint_eq(h.lo, x.low64);
  char s[33], want[33];
  cg_hash_format(h, s);
  snprintf(want, sizeof want, "%016llx%016llx", (unsigned long long)x.high64, (unsigned long long)x.low64);
  ck_assert_str_eq(s, want);
  cg_hash128 back;
  ck_assert_int_eq(hash_parse(s, &back), 0);
  ck_assert_uint_eq(back.hi, h.hi);
  ck_assert_uint_eq(back.lo, h.lo);
  for (int i = 0; i < 32; i++) s[i] = (char)(s[i] >= 'a' ? s[i] - 32 : s[i]); /* upper case accepted */
  ck_assert_int_eq(hash_parse(s, &back), 0);
  ck_assert_uint_eq(back.lo, h.lo);

  ck_assert_int_eq(hash_parse("0123456789abcdef0123456789abcde", &back), -1);   /* 31 */
  ck_assert_int_eq(hash_parse("0123456789abcdef0123456789abcdef0", &back), -1); /* 33 */
  ck_assert_int_eq(hash_parse("0123456789abcdef0123456789abcdeg", &back), -1);
  ck_assert_int_eq(hash_parse("", &back), -1);
  ck_assert_int_eq(hash_parse(NULL, &back), -1);
  cg_hash128 edge = {UINT64_MAX, 1};
  cg_hash_format(edge, s);
  ck_assert_str_eq(s, "ffffffffffffffff0000000000000001");
}
END_TEST

/* ---- images handed over as a bare pointer (the shim's case) ----
 * cuModuleLoadData gets no length: the inspector must read only what the
 * headers ask for, and only once it is known readable. Each input here ends
 * right before a PROT_NONE page; a single read too far kills the test. */

static void expect_bare_reject(const void *src, size_t n, const char *what, const char *why_part) {
  guarded g = guarded_new(n);
  cg_image_info info;
  int rc = cg_image_inspect(at_guard(&g, src, n), CG_IMAGE_MAX_BYTES, &info);
  ck_assert_msg(rc == -1, "%s: accepted as %s, size %zu", what, cg_image_kind_name(info.kind), info.size);
  ck_assert_int_eq(info.kind, CG_IMAGE_UNKNOWN);
  ck_assert_ptr_nonnull(info.why_unknown);
  if (why_part)
    ck_assert_msg(strstr(info.why_unknown, why_part) != NULL, "%s: why is '%s'", what, info.why_unknown);
  guarded_free(&g);
}

/* The headers of the reliability issue (#11), each before an unreadable page. */
START_TEST(bare_crafted_headers) {
  blob b = load("kernels_sm90.cubin");
  unsigned char *c = malloc(b.size);
  expect_bare_reject(b.bytes, 64, "64-byte header whose tables lie past it", "not readable");
  memcpy(c, b.bytes, b.size);
  put(c, 40, 8, 0x3fff0000); /* e_shoff */
  expect_bare_reject(c, b.size, "e_shoff 0x3fff0000", "not readable");
  memcpy(c, b.bytes, b.size);
  put(c, 32, 8, 0x3fff0000); /* e_phoff */
  if (get(c, 56, 2) == 0) put(c, 56, 2, 1);
  expect_bare_reject(c, b.size, "e_phoff 0x3fff0000", "not readable");
  memcpy(c, b.bytes, b.size);
  put(c, 56, 2, 0xffff); /* e_phnum */
  expect_bare_reject(c, b.size, "e_phnum 0xffff", "not readable");
  memcpy(c, b.bytes, b.size);
  put(c, 60, 2, 0xffff); /* e_shnum */
  expect_bare_reject(c, b.size, "e_shnum 0xffff", "not readable");
  /* A section whose data lies far away. */
  memcpy(c, b.bytes, b.size);
  unsigned sym = find_section(c, 2);
  put(c, shdr(c, sym) + 24, 8, 0x3fff0000);
  expect_bare_reject(c, b.size, "symtab at 0x3fff0000", "not readable");
  free(c);
  free(b.bytes);

  blob f = load("kernels_multi.fatbin");
  unsigned char *fc = malloc(f.size);
  memcpy(fc, f.bytes, f.size);
  put(fc, 8, 8, 0x3fff0000); /* fat_size */
  expect_bare_reject(fc, f.size, "fatbin claiming 1 GiB", "not readable");
  expect_bare_reject(f.bytes, 16, "fatbin header alone", "not readable");
  free(fc);
  free(f.bytes);

  blob t = load("kernels_sm90.ptx");
  expect_bare_reject(t.bytes, t.size - 1, "PTX without its NUL", "not readable");
  free(t.bytes);
  expect_bare_reject("\177EL", 3, "3 bytes", "not readable");
  expect_bare_reject("", 0, "nothing at all", "not readable");
}
END_TEST

/* Every sample, exactly at the page, bare: recognised, same size and hash as
 * with a known bound; every proper prefix refused without a fault. */
START_TEST(bare_samples_and_prefixes) {
  for (size_t s = 0; s < N_SAMPLES; s++) {
    blob b = load(all_samples[s]);
    guarded g = guarded_new(b.size);
    cg_image_info info;
    ck_assert_int_eq(cg_image_inspect(at_guard(&g, b.bytes, b.size), CG_IMAGE_MAX_BYTES, &info), 0);
    ck_assert_uint_eq(info.size, b.size);
    expect_hash_of(&info, &b);
    for (size_t n = 0; n < b.size; n += n < 256 ? 1 : 61) {
      int rc = cg_image_inspect(at_guard(&g, b.bytes, n), CG_IMAGE_MAX_BYTES, &info);
      ck_assert_msg(rc == -1, "%s cut to %zu accepted bare", all_samples[s], n);
      ck_assert_ptr_nonnull(info.why_unknown);
    }
    guarded_free(&g);
    free(b.bytes);
  }
}
END_TEST

START_TEST(bare_wrapper_to_unreadable) {
  guarded gw = guarded_new(sizeof(wrapper)), hole = guarded_new(1);
  wrapper w = {0x466243B1u, 1, hole.guard, NULL}; /* points at the PROT_NONE page itself */
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(at_guard(&gw, &w, sizeof w), CG_IMAGE_MAX_BYTES, &info), -1);
  ck_assert_msg(strstr(info.why_unknown, "not readable") != NULL, "why: %s", info.why_unknown);
  /* and a wrapper cut short by the page */
  ck_assert_int_eq(cg_image_inspect(at_guard(&gw, &w, 12), CG_IMAGE_MAX_BYTES, &info), -1);
  guarded_free(&gw);
  guarded_free(&hole);
}
END_TEST

START_TEST(mem_check_ranges) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 1u << 20;
  unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(m, MAP_FAILED);
  ck_assert_int_eq(cg_mem_check(m, len), CG_MEM_READABLE); /* more than one 256 KiB round */
  ck_assert_int_eq(cg_mem_check(m, 0), CG_MEM_READABLE);
  ck_assert_int_eq(mprotect(m + 150 * page, page, PROT_NONE), 0);
  ck_assert_int_eq(cg_mem_check(m, len), CG_MEM_UNREADABLE);
  ck_assert_int_eq(cg_mem_check(m + 150 * page - 1, 2), CG_MEM_UNREADABLE);
  ck_assert_int_eq(cg_mem_check(m + 150 * page - 100, 100), CG_MEM_READABLE);
  ck_assert_int_eq(cg_mem_check(m + 151 * page, len - 151 * page), CG_MEM_READABLE);
  ck_assert_int_eq(cg_mem_check(NULL, 1), CG_MEM_UNREADABLE);
  ck_assert_int_eq(cg_mem_check((void *)(uintptr_t)-16, 64), CG_MEM_UNREADABLE); /* wraps around */
  munmap(m, len);
  ck_assert_int_eq(cg_mem_check(m, page), CG_MEM_UNREADABLE); /* unmapped */
}
END_TEST

/* Where a seccomp filter refuses process_vm_readv (some containers), the
 * check falls back to a pipe and still tells readable from not. Check runs
 * each test in its own child, so the filter dies with it. */
START_TEST(mem_check_without_process_vm_readv) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
  ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
  char a = 1, b2;
  struct iovec l = {&b2, 1}, r = {&a, 1};
  ck_assert_int_eq((int)process_vm_readv(getpid(), &l, 1, &r, 1, 0), -1);
  ck_assert_int_eq(errno, EPERM);

  guarded g = guarded_new(3 * 4096);
  ck_assert_int_eq(cg_mem_check(g.base, (size_t)(g.guard - g.base)), CG_MEM_READABLE);
  ck_assert_int_eq(cg_mem_check(g.guard - 10, 11), CG_MEM_UNREADABLE);
  ck_assert_int_eq(cg_mem_check(g.guard, 1), CG_MEM_UNREADABLE);
  blob b = load("kernels_sm90.cubin");
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(at_guard(&g, b.bytes, b.size), CG_IMAGE_MAX_BYTES, &info), 0);
  ck_assert_uint_eq(info.size, b.size);
  ck_assert_int_eq(cg_image_inspect(at_guard(&g, b.bytes, 64), CG_IMAGE_MAX_BYTES, &info), -1);
  guarded_free(&g);
  free(b.bytes);
}
END_TEST

int main(void) {
  Suite *s = suite_create("image");
  TCase *ok = tcase_create("recognise");
  tcase_add_test(ok, cubin_sm80);
  tcase_add_test(ok, cubin_sm90);
  tcase_add_test(ok, kernel_params_from_the_cubin);
  tcase_add_test(ok, cubin_old_abi_arch);
  tcase_add_test(ok, size_ignores_trailing_bytes);
  tcase_add_test(ok, fatbin_default);
  tcase_add_test(ok, fatbin_plain);
  tcase_add_test(ok, fatbin_zstd);
  tcase_add_test(ok, fatbin_lz4);
  tcase_add_test(ok, fatbin_arch_on_device);
  tcase_add_test(ok, fatbin_lz4_names_with_scratch);
  tcase_add_test(ok, fatbin_ptx_entry_names);
  tcase_add_test(ok, fatbin_many_archs);
  tcase_add_test(ok, fatbin_wrapper);
  tcase_add_test(ok, ptx_file);
  tcase_add_test(ok, ptx_syntax_variants);
  tcase_add_test(ok, names_truncated);
  tcase_add_test(ok, bad_arguments);
  tcase_add_test(ok, hash_roundtrip);
  suite_add_tcase(s, ok);
  TCase *bad = tcase_create("malformed");
  tcase_set_timeout(bad, 120);
  tcase_add_test(bad, every_truncation);
  tcase_add_test(bad, cubin_corruptions);
  tcase_add_test(bad, fatbin_corruptions);
  tcase_add_test(bad, ptx_unterminated);
  tcase_add_test(bad, random_garbage);
  tcase_add_test(bad, random_mutations);
  suite_add_tcase(s, bad);
  TCase *bare = tcase_create("bare pointer");
  tcase_set_timeout(bare, 60);
  tcase_add_test(bare, bare_crafted_headers);
  tcase_add_test(bare, bare_samples_and_prefixes);
  tcase_add_test(bare, bare_wrapper_to_unreadable);
  tcase_add_test(bare, mem_check_ranges);
  tcase_add_test(bare, mem_check_without_process_vm_readv);
  suite_add_tcase(s, bare);
  return tk_check_run(s);
}
