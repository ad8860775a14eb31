/* Unit tests of detect/image/image.c naming the kernels of zstd-compressed fatbin
 * entries: nvcc's (tests/data/kernels_multi_zstd.fatbin) and torch's own
 * (two entries of libtorch_cuda.so, tests/data/README.md), whose kernel
 * names are read here with the zstd command and readelf, not capguard. */
#include "capguard/image.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "image_fields.h"

typedef struct {
  unsigned char *bytes;
  size_t size;
} blob;

static char *data_path(const char *name) {
  const char *dir = getenv("CG_TEST_DATA");
  ck_assert_msg(dir != NULL, "CG_TEST_DATA is not set");
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static blob load(const char *name) {
  FILE *f = fopen(data_path(name), "rb");
  ck_assert_msg(f != NULL, "cannot open %s", name);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  blob b = {malloc((size_t)n + 16), (size_t)n};
  ck_assert_uint_eq(fread(b.bytes, 1, b.size, f), b.size);
  fclose(f);
  return b;
}

/* Inspects f, then again with exactly the room it asked for. */
static void inspect_with_room(blob f, cg_image_info *info) {
  ck_assert_int_eq(cg_image_inspect(f.bytes, f.size, info), 0);
  ck_assert_uint_eq(info->n_kernels, 0);
  size_t room = info->unpack_room;
  ck_assert_uint_gt(room, 0);
  unsigned char *scratch = malloc(room);
  ck_assert_int_eq(cg_image_inspect_with(f.bytes, f.size, info, scratch, room), 0);
  ck_assert_uint_eq(info->unpack_room, 0);
  free(scratch);
}

/* nvcc -Xfatbin -compress-all: both ELF entries zstd; named with the room
 * it says, not with a byte less (the room is the largest entry's 6184 bytes
 * and the decoder's tables). */
START_TEST(nvcc_zstd_fatbin_named) {
  blob f = load("kernels_multi_zstd.fatbin");
  cg_image_info info;
  inspect_with_room(f, &info);
  ck_assert_uint_eq(info.n_kernels, 2);
  int axpy = 0, fill = 0;
  for (const char *k = cg_image_first_kernel(&info); k; k = cg_image_next_kernel(&info, k)) {
    axpy += strcmp(k, "cg_test_axpy") == 0;
    fill += strcmp(k, "cg_test_fill") == 0;
  }
  ck_assert(axpy == 1 && fill == 1);
  ck_assert_int_eq(cg_image_inspect(f.bytes, f.size, &info), 0);
  size_t room = info.unpack_room;
  ck_assert_uint_gt(room, 6184);
  unsigned char *scratch = malloc(room);
  ck_assert_int_eq(cg_image_inspect_with(f.bytes, f.size, &info, scratch, room - 1), 0);
  ck_assert_uint_eq(info.n_kernels, 2); /* the smaller entry (5224) fits, and names both */
  ck_assert_uint_eq(info.unpack_room, room);
  free(scratch);
  free(f.bytes);
}
END_TEST

/* The entry kernels (STT_FUNC with STO_CUDA_ENTRY, "[<other>: 10]") of a
 * torch entry's cubin, as the zstd command and readelf see them. */
static size_t readelf_kernels(const char *entry, char names[][512], size_t max) {
  blob e = load(entry);
  size_t hs = (size_t)get(e.bytes, 4, 4), clen = (size_t)get(e.bytes, 0x10, 4);
  free(e.bytes);
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "t=$(mktemp) && tail -c +%zu '%s' | head -c %zu | zstd -d -q -c > $t && readelf -sW $t; rc=$?; rm -f $t; "
           "exit $rc",
           hs + 1, data_path(entry), clen);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char line[4096];
  size_t n = 0;
  while (fgets(line, sizeof line, p)) {
    if (!strstr(line, " FUNC ") || !strstr(line, "[<other>: 10]")) continue;
    char *name = strrchr(line, ' ');
    name[strcspn(name, "\n")] = 0;
    ck_assert_uint_lt(n, max);
    snprintf(names[n++], 512, "%s", name + 1);
  }
  ck_assert_int_eq(pclose(p), 0);
  return n;
}

/* A fatbin holding one torch entry, as torch's own fatbins hold them. */
static blob fatbin_of(const char *entry) {
  blob e = load(entry);
  blob f = {malloc(16 + e.size), 16 + e.size};
  put(f.bytes, 0, 4, 0xBA55ED50u);
  put(f.bytes, 4, 2, 1);
  put(f.bytes, 6, 2, 16);
  put(f.bytes, 8, 8, e.size);
  memcpy(f.bytes + 16, e.bytes, e.size);
  free(e.bytes);
  return f;
}

static void check_torch_entry(const char *entry) {
  static char want[64][512];
  size_t n = readelf_kernels(entry, want, 64);
  ck_assert_uint_ge(n, 10);
  blob f = fatbin_of(entry);
  cg_image_info info;
  inspect_with_room(f, &info);
  ck_assert_uint_eq(info.sm_arch, 75);
  /* every name capguard gives is one of readelf's, each once; all of them
   * unless the names did not fit (CG_IMAGE_NAMES_BYTES) */
  size_t got = 0;
  for (const char *k = cg_image_first_kernel(&info); k; k = cg_image_next_kernel(&info, k)) {
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) hits += strcmp(k, want[i]) == 0;
    ck_assert_msg(hits == 1, "%s: kernel %s is not one of readelf's", entry, k);
    got++;
  }
  ck_assert_uint_eq(got, info.n_kernels);
  if (info.names_truncated)
    ck_assert_uint_ge(got, 10);
  else
    ck_assert_uint_eq(got, n);
  free(f.bytes);
}

START_TEST(torch_entries_named) {
  check_torch_entry("torch_flash_bwd_sm75_0.zstd.entry");
  check_torch_entry("torch_flash_bwd_sm75_2.zstd.entry");
}
END_TEST

/* A damaged frame leaves the entry unnamed and the image known. */
START_TEST(damaged_torch_entry_unnamed) {
  blob f = fatbin_of("torch_flash_bwd_sm75_0.zstd.entry");
  memset(f.bytes + 16 + 64 + 200, 0x55, 64);
  cg_image_info info;
  ck_assert_int_eq(cg_image_inspect(f.bytes, f.size, &info), 0);
  size_t room = info.unpack_room;
  unsigned char *scratch = malloc(room);
  ck_assert_int_eq(cg_image_inspect_with(f.bytes, f.size, &info, scratch, room), 0);
  ck_assert_int_eq(info.kind, CG_IMAGE_FATBIN);
  ck_assert_uint_eq(info.n_kernels, 0);
  /* a frame size past the payload is cut to the payload: still unnamed, no overread */
  put(f.bytes, 16 + 0x10, 4, 0xffffffffu);
  ck_assert_int_eq(cg_image_inspect_with(f.bytes, f.size, &info, scratch, room), 0);
  ck_assert_uint_eq(info.n_kernels, 0);
  free(scratch);
  free(f.bytes);
}
END_TEST

int main(void) {
  Suite *s = suite_create("image_zstd");
  TCase *t = tcase_create("zstd entries");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, nvcc_zstd_fatbin_named);
  tcase_add_test(t, torch_entries_named);
  tcase_add_test(t, damaged_torch_entry_unnamed);
  suite_add_tcase(s, t);
  return tk_check_run(s);
}
