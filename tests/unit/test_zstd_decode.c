/* Unit tests of detect/image/zstd_decode.c on frames the reference encoder (the
 * zstd command) makes here, from data made here, and on damaged frames.
 * Every compressed input ends at a PROT_NONE page, so a read past it crashes
 * the test instead of passing silently. */
#include "capguard/zstd_decode.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_run.h"

static cg_zstd_work work;

typedef struct {
  unsigned char *bytes;
  size_t size;
} blob;

/* ---- inputs ---- */

static uint64_t rng = 88172645463325252ull;
static uint32_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

/* Text-like data: words from a small vocabulary, numbers, now and then a
 * run of one byte (matches near and far, literals of every kind). */
static blob make_text(size_t n) {
  static const char *words[] = {"capture", "stream", "kernel", "module", "load", "graph", "cuda", "torch",
                                "fatbin", "entry", "the", "of", "a", "zstd", "frame", "block"};
  blob b = {malloc(n ? n : 1), n};
  size_t i = 0;
  while (i < n) {
    uint32_t r = next_rand();
    char w[32];
    int k = r % 17 == 0 ? snprintf(w, sizeof w, "%u ", r % 100000) : snprintf(w, sizeof w, "%s ", words[r % 16]);
    if (r % 97 == 0) k = snprintf(w, sizeof w, "%.*s", (int)(r % 30), "==============================");
    for (int j = 0; j < k && i < n; j++) b.bytes[i++] = (unsigned char)w[j];
  }
  return b;
}

static blob make_random(size_t n) {
  blob b = {malloc(n ? n : 1), n};
  for (size_t i = 0; i < n; i++) b.bytes[i] = (unsigned char)next_rand();
  return b;
}

static blob make_same(size_t n, unsigned char c) {
  blob b = {malloc(n ? n : 1), n};
  memset(b.bytes, c, n);
  return b;
}

/* ---- the zstd command ---- */

static blob read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  blob b = {malloc((size_t)n + 1), (size_t)n};
  ck_assert_uint_eq(fread(b.bytes, 1, b.size, f), b.size);
  fclose(f);
  return b;
}

/* The zstd command's frame of `in` with `args` (stdin: input piped, so the
 * frame has no content size). */
static blob compress(blob in, const char *args, int stdin_input) {
  char dir[] = "/tmp/cg-zstd-XXXXXX", cmd[512], ip[64], op[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(ip, sizeof ip, "%s/in", dir);
  snprintf(op, sizeof op, "%s/in.zst", dir);
  FILE *f = fopen(ip, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(in.bytes, 1, in.size, f), in.size);
  fclose(f);
  if (stdin_input)
    snprintf(cmd, sizeof cmd, "zstd -q -f %s -c < %s > %s", args, ip, op);
  else
    snprintf(cmd, sizeof cmd, "zstd -q -f %s %s -o %s", args, ip, op);
  ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
  blob z = read_file(op);
  unlink(ip);
  unlink(op);
  rmdir(dir);
  return z;
}

/* ---- decoding at a guard page ---- */

/* Decodes z placed so that it ends at a PROT_NONE page, into cap bytes. */
static cg_zstd_status decode_guarded(blob z, unsigned char *out, size_t cap, size_t *len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (z.size + page - 1) / page * page + page;
  unsigned char *m = mmap(NULL, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(m, MAP_FAILED);
  ck_assert_int_eq(mprotect(m + body, page, PROT_NONE), 0);
  unsigned char *p = m + body - z.size;
  if (z.size) memcpy(p, z.bytes, z.size);
  cg_zstd_status s = cg_zstd_decode(p, z.size, out, cap, len, &work);
  munmap(m, body + page);
  return s;
}

/* z decodes to exactly `want`, with room to spare and with exactly its room;
 * one byte less does not fit. */
static void expect_decodes(blob z, blob want) {
  size_t cap = want.size + 4096, len = 0;
  unsigned char *out = malloc(cap);
  cg_zstd_status s = decode_guarded(z, out, cap, &len);
  ck_assert_msg(s == CG_ZSTD_OK, "%s", cg_zstd_status_text(s));
  ck_assert_uint_eq(len, want.size);
  ck_assert(memcmp(out, want.bytes, want.size) == 0);
  ck_assert_int_eq(decode_guarded(z, out, want.size, &len), CG_ZSTD_OK);
  ck_assert_uint_eq(len, want.size);
  ck_assert(memcmp(out, want.bytes, want.size) == 0);
  if (want.size) ck_assert_int_eq(decode_guarded(z, out, want.size - 1, &len), CG_ZSTD_TOO_BIG);
  free(out);
}

/* ---- a frame's block types, read here from the format (3.1.1) ---- */

typedef struct {
  unsigned raw, rle, compressed;
  int has_fcs, has_checksum;
} frame_shape;

static frame_shape shape_of(blob z) {
  frame_shape sh = {0};
  const unsigned char *p = z.bytes;
  ck_assert_uint_ge(z.size, 6);
  unsigned fhd = p[4], single = (fhd >> 5) & 1, fcs_flag = fhd >> 6;
  static const unsigned did[4] = {0, 1, 2, 4}, fcs[4] = {0, 2, 4, 8};
  size_t i = 5 + !single + did[fhd & 3] + (fcs_flag == 0 && single ? 1 : fcs[fcs_flag]);
  sh.has_fcs = fcs_flag != 0 || single;
  sh.has_checksum = (fhd >> 2) & 1;
  for (;;) {
    ck_assert_uint_le(i + 3, z.size);
    unsigned bh = p[i] | p[i + 1] << 8 | p[i + 2] << 16, type = (bh >> 1) & 3;
    size_t size = bh >> 3;
    i += 3;
    if (type == 0) sh.raw++, i += size;
    else if (type == 1) sh.rle++, i += 1;
    else sh.compressed++, i += size;
    if (bh & 1) break;
  }
  return sh;
}

/* ---- frames of the reference encoder ---- */

START_TEST(levels_of_text) {
  blob t = make_text(300 << 10); /* three blocks and more */
  static const char *levels[] = {"-1", "-3", "-19", "--ultra -22"};
  for (unsigned k = 0; k < sizeof levels / sizeof *levels; k++) {
    blob z = compress(t, levels[k], 0);
    frame_shape sh = shape_of(z);
    ck_assert_msg(sh.compressed >= 3, "%s: %u compressed blocks", levels[k], sh.compressed);
    ck_assert(sh.has_fcs && sh.has_checksum);
    expect_decodes(z, t);
    free(z.bytes);
  }
  free(t.bytes);
}
END_TEST

START_TEST(long_window_and_no_check) {
  /* 2 MiB whose second half repeats the first: matches 1 MiB back */
  blob t = make_text(1 << 20), big = {malloc(2 << 20), 2 << 20};
  memcpy(big.bytes, t.bytes, t.size);
  memcpy(big.bytes + t.size, t.bytes, t.size);
  blob z = compress(big, "--long=24 -3", 0);
  ck_assert_uint_lt(z.size, t.size / 2);
  expect_decodes(z, big);
  free(z.bytes);
  z = compress(big, "-3 --no-check", 0);
  ck_assert(!shape_of(z).has_checksum);
  expect_decodes(z, big);
  free(z.bytes);
  free(t.bytes);
  free(big.bytes);
}
END_TEST

START_TEST(streamed_without_content_size) {
  blob t = make_text(200 << 10);
  blob z = compress(t, "-3", 1);
  frame_shape sh = shape_of(z);
  ck_assert(!sh.has_fcs);
  expect_decodes(z, t);
  free(z.bytes);
  z = compress(t, "-3 --no-check", 1);
  sh = shape_of(z);
  ck_assert(!sh.has_fcs && !sh.has_checksum);
  expect_decodes(z, t);
  free(z.bytes);
  free(t.bytes);
}
END_TEST

START_TEST(empty_input) {
  blob e = {malloc(1), 0};
  blob z = compress(e, "-3", 0);
  expect_decodes(z, e);
  free(z.bytes);
  z = compress(e, "-3", 1);
  expect_decodes(z, e);
  free(z.bytes);
  /* no frame at all: nothing, decoded */
  size_t len = 7;
  unsigned char out[1];
  ck_assert_int_eq(cg_zstd_decode(out, 0, out, sizeof out, &len, &work), CG_ZSTD_OK);
  ck_assert_uint_eq(len, 0);
  /* no buffer at all: an empty frame decodes, one with content does not fit */
  ck_assert_int_eq(cg_zstd_decode(e.bytes, 0, NULL, 0, &len, &work), CG_ZSTD_OK);
  blob one = make_text(100), zo = compress(one, "-3", 0);
  ck_assert_int_eq(cg_zstd_decode(zo.bytes, zo.size, NULL, 0, &len, &work), CG_ZSTD_TOO_BIG);
  free(one.bytes), free(zo.bytes);
  free(e.bytes);
}
END_TEST

START_TEST(repetitive_input_rle_blocks) {
  blob t = make_same(400 << 10, 'a');
  blob z = compress(t, "-3", 0);
  frame_shape sh = shape_of(z);
  ck_assert_uint_ge(sh.rle, 3);
  expect_decodes(z, t);
  free(z.bytes);
  free(t.bytes);
}
END_TEST

START_TEST(incompressible_input_raw_blocks) {
  blob t = make_random(300 << 10);
  blob z = compress(t, "-3", 0);
  frame_shape sh = shape_of(z);
  ck_assert_uint_ge(sh.raw, 3);
  expect_decodes(z, t);
  free(z.bytes);
  free(t.bytes);
}
END_TEST

/* Mixed: text, random and runs in one input, so literals go raw, RLE and
 * Huffman (1 and 4 streams) block after block, tables repeat. */
START_TEST(mixed_input_many_levels) {
  size_t n = 0, cap = 1 << 20;
  blob t = {malloc(cap), 0};
  while (n + 20000 < cap) {
    uint32_t r = next_rand(), len = 1 + r % 19000;
    blob piece = r % 3 == 0 ? make_random(len) : r % 3 == 1 ? make_text(len) : make_same(len, (unsigned char)r);
    memcpy(t.bytes + n, piece.bytes, len);
    n += len;
    free(piece.bytes);
  }
  t.size = n;
  for (int level = 1; level <= 19; level += 3) {
    char a[16];
    snprintf(a, sizeof a, "-%d", level);
    blob z = compress(t, a, 0);
    expect_decodes(z, t);
    free(z.bytes);
  }
  /* and small inputs: a frame of a few bytes */
  for (size_t len = 1; len < 300; len += 37) {
    blob s = make_text(len);
    blob z = compress(s, "-19", 0);
    expect_decodes(z, s);
    free(z.bytes);
    free(s.bytes);
  }
  free(t.bytes);
}
END_TEST

/* Literals all one byte (RLE literals): 'Z' then a piece of random bytes
 * seen before, again and again; and a two-letter text, whose blocks hold
 * more than 32,512 short sequences (the 3-byte sequence count). */
START_TEST(rle_literals_and_many_sequences) {
  blob seen = make_random(4096), t = {malloc(600 << 10), 0};
  memcpy(t.bytes, seen.bytes, seen.size);
  t.size = seen.size;
  while (t.size + 40 < (600 << 10)) {
    t.bytes[t.size++] = 'Z';
    memcpy(t.bytes + t.size, seen.bytes + next_rand() % 4000, 32);
    t.size += 32;
  }
  blob z = compress(t, "-3", 0);
  expect_decodes(z, t);
  free(z.bytes);
  blob ab = {malloc(400 << 10), 400 << 10};
  for (size_t i = 0; i < ab.size; i++) ab.bytes[i] = next_rand() % 2 ? 'a' : 'b';
  z = compress(ab, "-19", 0);
  expect_decodes(z, ab);
  free(z.bytes);
  free(ab.bytes), free(t.bytes), free(seen.bytes);
}
END_TEST

START_TEST(skippable_and_concatenated_frames) {
  blob a = make_text(5000), b = make_random(3000);
  blob za = compress(a, "-3", 0), zb = compress(b, "-1", 1);
  blob all = {malloc(za.size + zb.size + 64), 0};
  static const unsigned char skip[] = {0x5a, 0x2a, 0x4d, 0x18, 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'};
  memcpy(all.bytes, skip, sizeof skip);
  memcpy(all.bytes + sizeof skip, za.bytes, za.size);
  memcpy(all.bytes + sizeof skip + za.size, zb.bytes, zb.size);
  all.size = sizeof skip + za.size + zb.size;
  blob both = {malloc(a.size + b.size), a.size + b.size};
  memcpy(both.bytes, a.bytes, a.size);
  memcpy(both.bytes + a.size, b.bytes, b.size);
  expect_decodes(all, both);
  /* a skippable frame alone: no output; one that claims more than is there fails */
  blob s = {(unsigned char *)skip, sizeof skip};
  size_t len;
  unsigned char out[16];
  ck_assert_int_eq(decode_guarded(s, out, sizeof out, &len), CG_ZSTD_OK);
  ck_assert_uint_eq(len, 0);
  s.size--;
  ck_assert_int_eq(decode_guarded(s, out, sizeof out, &len), CG_ZSTD_TRUNCATED);
  free(za.bytes), free(zb.bytes), free(all.bytes), free(both.bytes), free(a.bytes), free(b.bytes);
}
END_TEST

/* ---- malformed input ---- */

START_TEST(dictionary_and_reserved_bits) {
  /* single segment, 1-byte dictionary id, 1-byte content size 0, last raw block of 0 */
  unsigned char f[] = {0x28, 0xb5, 0x2f, 0xfd, 0x21, 7, 0, 0x01, 0, 0};
  blob b = {f, sizeof f};
  size_t len;
  unsigned char out[8];
  ck_assert_int_eq(decode_guarded(b, out, sizeof out, &len), CG_ZSTD_DICTIONARY);
  f[5] = 0; /* id 0: no dictionary */
  ck_assert_int_eq(decode_guarded(b, out, sizeof out, &len), CG_ZSTD_OK);
  ck_assert_uint_eq(len, 0);
  f[4] |= 8; /* the reserved bit */
  ck_assert_int_eq(decode_guarded(b, out, sizeof out, &len), CG_ZSTD_BAD_HEADER);
  f[4] &= ~8u;
  f[7] = 0x07; /* block type 3, reserved */
  ck_assert_int_eq(decode_guarded(b, out, sizeof out, &len), CG_ZSTD_BAD_BLOCK);
  f[7] = 0x01;
  f[0] = 0x29;
  ck_assert_int_eq(decode_guarded(b, out, sizeof out, &len), CG_ZSTD_BAD_MAGIC);
  ck_assert_str_eq(cg_zstd_status_text(CG_ZSTD_BAD_MAGIC), "zstd: not a zstd frame (bad magic number)");
  /* a compressed block of RLE literals ('x' 5 times) and no sequences */
  unsigned char r[] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, 5, 0x1d, 0, 0, 0x29, 'x', 0};
  blob rb = {r, sizeof r};
  ck_assert_int_eq(decode_guarded(rb, out, sizeof out, &len), CG_ZSTD_OK);
  ck_assert_uint_eq(len, 5);
  ck_assert(memcmp(out, "xxxxx", 5) == 0);
  ck_assert_int_eq(decode_guarded(rb, out, 4, &len), CG_ZSTD_TOO_BIG);
  r[11] = 1; /* one sequence, and no byte for its modes */
  ck_assert_int_eq(decode_guarded(rb, out, sizeof out, &len), CG_ZSTD_TRUNCATED);
}
END_TEST

/* Every strict prefix of a frame (checksum or not, content size or not) fails. */
START_TEST(every_truncation_fails) {
  blob t = make_text(3000);
  static const char *how[] = {"-19", "-1 --no-check"};
  for (int k = 0; k < 4; k++) {
    blob z = compress(t, how[k % 2], k / 2);
    unsigned char *out = malloc(t.size + 64);
    for (size_t cut = 1; cut < z.size; cut++) {
      blob p = {z.bytes, cut};
      size_t len;
      cg_zstd_status s = decode_guarded(p, out, t.size + 64, &len);
      ck_assert_msg(s != CG_ZSTD_OK, "%s%s: a prefix of %zu bytes of %zu decoded (%zu bytes)", how[k % 2],
                    k / 2 ? " streamed" : "", cut, z.size, len);
    }
    free(out);
    free(z.bytes);
  }
  free(t.bytes);
}
END_TEST

/* Every single-bit flip of a checksummed frame: an error, or the very same
 * bytes (a flip in a bit that does not change the output). */
START_TEST(every_bit_flip_fails_or_is_harmless) {
  blob t = make_text(2000);
  for (int k = 0; k < 2; k++) {
    blob z = compress(t, k ? "-19" : "-1", 0);
    unsigned char *out = malloc(t.size + 64);
    unsigned harmless = 0;
    for (size_t bit = 0; bit < z.size * 8; bit++) {
      z.bytes[bit / 8] ^= (unsigned char)(1u << (bit % 8));
      size_t len;
      cg_zstd_status s = decode_guarded(z, out, t.size + 64, &len);
      if (s == CG_ZSTD_OK) {
        ck_assert_msg(len == t.size && memcmp(out, t.bytes, t.size) == 0, "bit %zu: decoded to other bytes", bit);
        harmless++;
      }
      z.bytes[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    /* harmless: the unused header bit, padding after a table description,
     * an offset moved onto the same bytes (the text repeats): a few */
    ck_assert_uint_lt(harmless, z.size * 8 / 20);
    free(out);
    free(z.bytes);
  }
  free(t.bytes);
}
END_TEST

/* Random bytes after a valid frame header, and random mutations of real
 * frames: any status, no crash, no read past the input (the guard page). */
START_TEST(random_damage) {
  blob t = make_text(20000);
  blob z = compress(t, "-19", 0);
  unsigned char *out = malloc(t.size + 64);
  for (int round = 0; round < 3000; round++) {
    blob m = {malloc(z.size), z.size};
    memcpy(m.bytes, z.bytes, z.size);
    int flips = 1 + (int)(next_rand() % 8);
    for (int k = 0; k < flips; k++) {
      size_t at = 4 + next_rand() % (z.size - 4);
      m.bytes[at] = (unsigned char)(round % 2 ? next_rand() : m.bytes[at] ^ (1u << (next_rand() % 8)));
    }
    if (round % 5 == 0) m.size = 1 + next_rand() % z.size;
    size_t len;
    cg_zstd_status s = decode_guarded(m, out, t.size + 64, &len);
    if (s == CG_ZSTD_OK) ck_assert_uint_le(len, t.size + 64);
    ck_assert_ptr_nonnull(cg_zstd_status_text(s));
    free(m.bytes);
  }
  free(out);
  free(z.bytes);
  free(t.bytes);
}
END_TEST

int main(void) {
  Suite *s = suite_create("zstd_decode");
  TCase *ok = tcase_create("reference frames");
  tcase_set_timeout(ok, 120);
  tcase_add_test(ok, levels_of_text);
  tcase_add_test(ok, long_window_and_no_check);
  tcase_add_test(ok, streamed_without_content_size);
  tcase_add_test(ok, empty_input);
  tcase_add_test(ok, repetitive_input_rle_blocks);
  tcase_add_test(ok, incompressible_input_raw_blocks);
  tcase_add_test(ok, mixed_input_many_levels);
  tcase_add_test(ok, rle_literals_and_many_sequences);
  tcase_add_test(ok, skippable_and_concatenated_frames);
  suite_add_tcase(s, ok);
  TCase *bad = tcase_create("malformed");
  tcase_set_timeout(bad, 120);
  tcase_add_test(bad, dictionary_and_reserved_bits);
  tcase_add_test(bad, every_truncation_fails);
  tcase_add_test(bad, every_bit_flip_fails_or_is_harmless);
  tcase_add_test(bad, random_damage);
  suite_add_tcase(s, bad);
  return tk_check_run(s);
}
