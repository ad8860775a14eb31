/* Zstandard frame decoder, written from RFC 8878 (sections named below).
 *
 * Output goes straight into the caller's flat buffer, which is the whole
 * history a match may reach back into (so the frame's window size matters
 * only as a promise: any window is decoded as long as the output fits).
 * A compressed block's literals are staged at the buffer's end: every
 * literal is output eventually, so if they do not fit between the output so
 * far and cap, neither would the block; and while sequences run, the write
 * position stays at or before the next unread literal, or the block's output
 * would pass cap (checked per match, said as CG_ZSTD_TOO_BIG).
 *
 * Work is bounded: every block consumes at least 3 input bytes, every
 * sequence outputs at least 3 bytes, every Huffman symbol one byte. */
#include "capguard/zstd_decode.h"

#include <stdbool.h>
#include <string.h>
#include <xxhash.h>

#define ZSTD_MAGIC 0xFD2FB528u
#define SKIPPABLE_MASK 0xFFFFFFF0u
#define SKIPPABLE_MAGIC 0x184D2A50u
#define BLOCK_MAX ((size_t)128 << 10) /* Block_Maximum_Size's ceiling (3.1.1.2.3) */
#define HUF_LOG_MAX 12u               /* what the reference decoder accepts (RFC: 11) */
#define HUF_WEIGHTS_MAX 255u
#define LL_MAX 35u
#define ML_MAX 52u
#define OF_MAX 31u
#define LL_LOG_MAX 9u
#define ML_LOG_MAX 9u
#define OF_LOG_MAX 8u

typedef cg_zstd_status st;

/* ---- little-endian loads ---- */

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Up to 8 bytes at p, of which n are there (the rest read as 0). */
static inline uint64_t le64_upto(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  if (n >= 8) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, p, 8);
    return v;
#else
    n = 8;
#endif
  }
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static unsigned highbit32(uint32_t v) { return 31u - (unsigned)__builtin_clz(v); } /* v != 0 */

/* ---- backward bit stream (4.1, 4.2.2: read from the end, past a 1 marker) ---- */

typedef struct {
  const uint8_t *p;
  size_t n;
  int64_t pos; /* bits not yet read: [0, pos); negative once read past the start */
} bwd;

static bool bwd_init(bwd *b, const uint8_t *p, size_t n) {
  if (n == 0 || p[n - 1] == 0) return false;
  b->p = p;
  b->n = n;
  b->pos = (int64_t)(n - 1) * 8 + highbit32(p[n - 1]);
  return true;
}

/* The nb (<= 32) bits below pos; bits before the start read as 0. */
static inline uint64_t bwd_peek(const bwd *b, unsigned nb) {
  if (nb == 0) return 0;
  int64_t lo = b->pos - (int64_t)nb;
  if (lo >= 0) {
    /* the 8 bytes that end with pos's last bit's byte hold all nb bits */
    size_t last = (size_t)(b->pos - 1) >> 3;
    if (last >= 7)
      return (le64_upto(b->p + last - 7, 8) >> (lo - (int64_t)(last - 7) * 8)) & ((UINT64_C(1) << nb) - 1);
    return (le64_upto(b->p, b->n) >> lo) & ((UINT64_C(1) << nb) - 1);
  }
  if (b->pos <= 0) return 0;
  uint64_t have = le64_upto(b->p, b->n) & ((UINT64_C(1) << b->pos) - 1);
  return have << (unsigned)-lo;
}

static uint64_t bwd_read(bwd *b, unsigned nb) {
  if (nb == 0) return 0;
  uint64_t v = bwd_peek(b, nb);
  b->pos -= nb;
  return v;
}

/* ---- forward bit stream (the FSE table description, 4.1.1) ---- */

typedef struct {
  const uint8_t *p;
  size_t n;
  size_t pos; /* bits read */
} fwd;

static uint32_t fwd_peek(const fwd *f, unsigned nb) { /* nb <= 16; past the end reads 0 */
  size_t i = f->pos >> 3;
  if (i >= f->n) return 0;
  return (uint32_t)(le64_upto(f->p + i, f->n - i) >> (f->pos & 7)) & ((1u << nb) - 1);
}

/* ---- FSE tables (4.1.1) ---- */

/* Reads a table description from p[0, n): norm[0, *nsym), *log; *used bytes. */
static st fse_read_desc(const uint8_t *p, size_t n, unsigned max_sym, unsigned max_log, int16_t *norm,
                        unsigned *nsym, unsigned *log, size_t *used) {
  fwd f = {p, n, 0};
  if (n == 0) return CG_ZSTD_TRUNCATED;
  unsigned al = fwd_peek(&f, 4) + 5;
  f.pos = 4;
  if (al > max_log) return CG_ZSTD_BAD_FSE;
  int remaining = (1 << al) + 1, threshold = 1 << al;
  unsigned nbits = al + 1, sym = 0;
  while (remaining > 1 && sym <= max_sym) {
    int max = (2 * threshold - 1) - remaining, value;
    int low = (int)fwd_peek(&f, nbits - 1);
    if (low < max) {
      value = low;
      f.pos += nbits - 1;
    } else {
      value = (int)fwd_peek(&f, nbits);
      if (value >= threshold) value -= max;
      f.pos += nbits;
    }
    int count = value - 1;
    remaining -= count < 0 ? -count : count;
    norm[sym++] = (int16_t)count;
    if (count == 0) { /* 2-bit repeat flags: that many more zeros, again while 3 */
      unsigned r;
      do {
        r = fwd_peek(&f, 2);
        f.pos += 2;
        if (sym + r > max_sym + 1) return CG_ZSTD_BAD_FSE;
        for (unsigned k = 0; k < r; k++) norm[sym++] = 0;
      } while (r == 3 && f.pos <= n * 8);
    }
    if (f.pos > n * 8) return CG_ZSTD_TRUNCATED;
    while (remaining < threshold) {
      nbits--;
      threshold >>= 1;
    }
  }
  if (remaining != 1 || sym > max_sym + 1) return CG_ZSTD_BAD_FSE;
  *used = (f.pos + 7) / 8;
  if (*used > n) return CG_ZSTD_TRUNCATED;
  *nsym = sym;
  *log = al;
  return CG_ZSTD_OK;
}

/* Spreads norm[0, nsym) (summing to 1 << log) over cells and gives each its
 * bits and baseline. */
static st fse_build(const int16_t *norm, unsigned nsym, unsigned log, cg_zstd_fse_cell *cells) {
  uint32_t size = 1u << log, high = size - 1, mask = size - 1, step = (size >> 1) + (size >> 3) + 3;
  uint16_t next[256];
  for (unsigned s = 0; s < nsym; s++) {
    if (norm[s] == -1) {
      cells[high--].sym = (uint8_t)s;
      next[s] = 1;
    } else {
      next[s] = (uint16_t)norm[s];
    }
  }
  uint32_t pos = 0;
  for (unsigned s = 0; s < nsym; s++)
    for (int k = 0; k < norm[s]; k++) {
      cells[pos].sym = (uint8_t)s;
      do pos = (pos + step) & mask;
      while (pos > high);
    }
  if (pos != 0) return CG_ZSTD_BAD_FSE;
  for (uint32_t u = 0; u < size; u++) {
    uint32_t ns = next[cells[u].sym]++;
    unsigned bits = log - highbit32(ns);
    cells[u].bits = (uint8_t)bits;
    cells[u].base = (uint16_t)((ns << bits) - size);
  }
  return CG_ZSTD_OK;
}

/* ---- Huffman literals (4.2) ---- */

/* Builds the decoding table from weights w[0, n) (the last one implicit). */
static st huf_build(uint8_t *w, unsigned n, cg_zstd_work *z) {
  uint32_t sum = 0, rank[HUF_LOG_MAX + 2] = {0};
  for (unsigned s = 0; s < n; s++) {
    if (w[s] > HUF_LOG_MAX) return CG_ZSTD_BAD_HUFFMAN;
    if (w[s]) sum += (uint32_t)1 << (w[s] - 1);
  }
  if (sum == 0) return CG_ZSTD_BAD_HUFFMAN;
  unsigned maxbits = highbit32(sum) + 1;
  if (maxbits > HUF_LOG_MAX) return CG_ZSTD_BAD_HUFFMAN;
  uint32_t left = ((uint32_t)1 << maxbits) - sum;
  if (left & (left - 1)) return CG_ZSTD_BAD_HUFFMAN; /* the last weight makes a power of 2 */
  if (n >= 256) return CG_ZSTD_BAD_HUFFMAN;
  w[n++] = (uint8_t)(highbit32(left) + 1);
  for (unsigned s = 0; s < n; s++) rank[w[s]]++;
  uint32_t start[HUF_LOG_MAX + 2], at = 0;
  for (unsigned k = 1; k <= maxbits; k++) { /* low weights (long codes) take the low prefixes */
    start[k] = at;
    at += rank[k] << (k - 1);
  }
  for (unsigned s = 0; s < n; s++) {
    if (!w[s]) continue;
    uint32_t len = (uint32_t)1 << (w[s] - 1);
    cg_zstd_huf_cell c = {(uint8_t)s, (uint8_t)(maxbits + 1 - w[s])};
    for (uint32_t k = 0; k < len; k++) z->huf[start[w[s]] + k] = c;
    start[w[s]] += len;
  }
  z->huf_log = maxbits;
  z->have_huf = 1;
  return CG_ZSTD_OK;
}

/* The tree description (4.2.1) at p[0, n); *used bytes. */
static st huf_read_tree(const uint8_t *p, size_t n, cg_zstd_work *z, size_t *used) {
  uint8_t w[256];
  unsigned nw = 0;
  if (n == 0) return CG_ZSTD_TRUNCATED;
  unsigned hb = p[0];
  if (hb >= 128) { /* direct: 4 bits a weight */
    nw = hb - 127;
    size_t bytes = (nw + 1) / 2;
    if (bytes > n - 1) return CG_ZSTD_TRUNCATED;
    for (unsigned i = 0; i < nw; i++) w[i] = (uint8_t)(i & 1 ? p[1 + i / 2] & 15 : p[1 + i / 2] >> 4);
    *used = 1 + bytes;
  } else { /* FSE-compressed weights, two interleaved states */
    if (hb == 0) return CG_ZSTD_BAD_HUFFMAN;
    if (hb > n - 1) return CG_ZSTD_TRUNCATED;
    int16_t norm[256];
    unsigned nsym, log;
    size_t d;
    cg_zstd_fse_cell cells[64];
    st r = fse_read_desc(p + 1, hb, 255, 6, norm, &nsym, &log, &d);
    if (r) return r == CG_ZSTD_TRUNCATED ? CG_ZSTD_BAD_HUFFMAN : r;
    if ((r = fse_build(norm, nsym, log, cells))) return r;
    bwd b;
    if (!bwd_init(&b, p + 1 + d, hb - d)) return CG_ZSTD_BAD_HUFFMAN;
    /* bits read past the start are 0; the state that reads past it ends
     * the weights, after the other state's symbol */
    uint32_t s1 = (uint32_t)bwd_read(&b, log), s2 = (uint32_t)bwd_read(&b, log);
    for (;;) {
      if (nw + 2 > HUF_WEIGHTS_MAX) return CG_ZSTD_BAD_HUFFMAN;
      w[nw++] = cells[s1].sym;
      s1 = cells[s1].base + (uint32_t)bwd_read(&b, cells[s1].bits);
      if (b.pos < 0) {
        w[nw++] = cells[s2].sym;
        break;
      }
      if (nw + 2 > HUF_WEIGHTS_MAX) return CG_ZSTD_BAD_HUFFMAN;
      w[nw++] = cells[s2].sym;
      s2 = cells[s2].base + (uint32_t)bwd_read(&b, cells[s2].bits);
      if (b.pos < 0) {
        w[nw++] = cells[s1].sym;
        break;
      }
    }
    *used = 1 + hb;
  }
  return huf_build(w, nw, z);
}

/* Decodes count symbols of one stream p[0, n) into out: the stream ends
 * with a 1 marker bit and exactly after its last symbol (4.2.2). (The
 * reference decoder, decoding two symbols a lookup, lets a stream's last
 * symbol read past its start or leave bits unread, and its fast loop takes a
 * last byte of 0, no marker: decoded then from bits of its own. Such a
 * stream is malformed here, said as CG_ZSTD_HUFFMAN_END.) */
static st huf_stream(const cg_zstd_work *z, const uint8_t *p, size_t n, uint8_t *out, size_t count) {
  bwd b;
  if (!bwd_init(&b, p, n)) return CG_ZSTD_HUFFMAN_END;
  unsigned log = z->huf_log;
  for (size_t i = 0; i < count; i++) {
    cg_zstd_huf_cell c = z->huf[bwd_peek(&b, log)];
    out[i] = c.sym;
    b.pos -= c.bits;
    if (b.pos < 0) return CG_ZSTD_HUFFMAN_END;
  }
  return b.pos == 0 ? CG_ZSTD_OK : CG_ZSTD_HUFFMAN_END;
}

/* ---- literals section (3.1.1.3.1) ---- */

typedef struct {
  const uint8_t *lit; /* the block's literals: in src (raw) or staged at dst's end */
  size_t n;
  bool staged;
} literals;

static st read_literals(const uint8_t *p, size_t n, uint8_t *dst, size_t cap, size_t o, cg_zstd_work *z,
                        literals *L, size_t *used) {
  if (n == 0) return CG_ZSTD_TRUNCATED;
  unsigned type = p[0] & 3, sf = (p[0] >> 2) & 3;
  size_t hs, regen, comp = 0;
  bool four = false;
  if (type < 2) {
    hs = sf == 1 ? 2 : sf == 3 ? 3 : 1;
    if (n < hs) return CG_ZSTD_TRUNCATED;
    regen = hs == 1 ? (size_t)p[0] >> 3
            : hs == 2 ? ((size_t)p[0] >> 4) + ((size_t)p[1] << 4)
                      : ((size_t)p[0] >> 4) + ((size_t)p[1] << 4) + ((size_t)p[2] << 12);
  } else {
    hs = sf < 2 ? 3 : sf == 2 ? 4 : 5;
    if (n < hs) return CG_ZSTD_TRUNCATED;
    uint64_t v = le64_upto(p, hs);
    unsigned bits = sf < 2 ? 10 : sf == 2 ? 14 : 18;
    regen = (size_t)(v >> 4) & (((size_t)1 << bits) - 1);
    comp = (size_t)(v >> (4 + bits)) & (((size_t)1 << bits) - 1);
    four = sf != 0;
  }
  if (regen > BLOCK_MAX) return CG_ZSTD_BAD_LITERALS;
  L->n = regen;
  if (type == 0) {
    if (regen > n - hs) return CG_ZSTD_TRUNCATED;
    L->lit = p + hs;
    L->staged = false;
    *used = hs + regen;
    return CG_ZSTD_OK;
  }
  if (regen > cap - o) return CG_ZSTD_TOO_BIG;
  uint8_t *stage = dst + cap - regen;
  L->lit = stage;
  L->staged = true;
  if (type == 1) {
    if (n - hs < 1) return CG_ZSTD_TRUNCATED;
    memset(stage, p[hs], regen);
    *used = hs + 1;
    return CG_ZSTD_OK;
  }
  if (comp > n - hs) return CG_ZSTD_TRUNCATED;
  const uint8_t *c = p + hs;
  size_t cn = comp;
  st r;
  if (type == 2) {
    size_t t;
    if ((r = huf_read_tree(c, cn, z, &t))) return r;
    c += t;
    cn -= t;
  } else if (!z->have_huf) {
    return CG_ZSTD_NO_TABLE;
  }
  if (!four) {
    if ((r = huf_stream(z, c, cn, stage, regen))) return r;
  } else {
    if (cn < 6) return CG_ZSTD_BAD_LITERALS;
    size_t s1 = (size_t)c[0] | (size_t)c[1] << 8, s2 = (size_t)c[2] | (size_t)c[3] << 8,
           s3 = (size_t)c[4] | (size_t)c[5] << 8;
    if (s1 + s2 + s3 > cn - 6) return CG_ZSTD_BAD_LITERALS;
    size_t s4 = cn - 6 - s1 - s2 - s3, seg = (regen + 3) / 4;
    if (3 * seg > regen) return CG_ZSTD_BAD_LITERALS;
    const uint8_t *q = c + 6;
    if ((r = huf_stream(z, q, s1, stage, seg)) || (r = huf_stream(z, q + s1, s2, stage + seg, seg)) ||
        (r = huf_stream(z, q + s1 + s2, s3, stage + 2 * seg, seg)) ||
        (r = huf_stream(z, q + s1 + s2 + s3, s4, stage + 3 * seg, regen - 3 * seg)))
      return r;
  }
  *used = hs + comp;
  return CG_ZSTD_OK;
}

/* ---- sequences section (3.1.1.3.2) ---- */

static const uint32_t ll_base[LL_MAX + 1] = {0,  1,  2,   3,   4,   5,    6,    7,    8,    9,     10,    11,
                                            12, 13, 14,  15,  16,  18,   20,   22,   24,   28,    32,    40,
                                            48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
static const uint8_t ll_bits[LL_MAX + 1] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  0,  1,  1,
                                           1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint32_t ml_base[ML_MAX + 1] = {
    3,  4,  5,  6,  7,  8,  9,  10, 11, 12,  13,  14,  15,  16,  17,   18,   19,   20,   21,    22,    23,    24,
    25, 26, 27, 28, 29, 30, 31, 32, 33, 34,  35,  37,  39,  41,  43,   47,   51,   59,   67,    83,    99,    131,
    259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539};
static const uint8_t ml_bits[ML_MAX + 1] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1,
                                           2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
/* The predefined distributions (3.1.1.3.2.2). */
static const int16_t ll_default[LL_MAX + 1] = {4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2,
                                              2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1};
static const int16_t ml_default[ML_MAX + 1] = {1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1,  1,
                                              1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  1,
                                              1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1};
static const int16_t of_default[29] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1,
                                       1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1};

/* One of the three tables, by its 2-bit mode (predefined, RLE, FSE, repeat). */
static st seq_table(unsigned mode, const uint8_t *p, size_t n, size_t *used, unsigned max_sym, unsigned max_log,
                    const int16_t *def, unsigned def_n, unsigned def_log, cg_zstd_fse_cell *cells, unsigned *log,
                    int *have) {
  int16_t norm[ML_MAX + 1];
  unsigned nsym, l;
  st r;
  *used = 0;
  switch (mode) {
  case 0:
    if ((r = fse_build(def, def_n, def_log, cells))) return r;
    *log = def_log;
    break;
  case 1:
    if (n < 1) return CG_ZSTD_TRUNCATED;
    if (p[0] > max_sym) return CG_ZSTD_BAD_SEQUENCES;
    cells[0] = (cg_zstd_fse_cell){0, p[0], 0};
    *log = 0;
    *used = 1;
    break;
  case 2:
    if ((r = fse_read_desc(p, n, max_sym, max_log, norm, &nsym, &l, used))) return r;
    if ((r = fse_build(norm, nsym, l, cells))) return r;
    *log = l;
    break;
  default:
    if (!*have) return CG_ZSTD_NO_TABLE;
    return CG_ZSTD_OK;
  }
  *have = 1;
  return CG_ZSTD_OK;
}

/* Copies the next k literals to dst[*o]; they are there (checked by the caller). */
static void put_literals(uint8_t *dst, size_t *o, const literals *L, size_t *li, size_t k) {
  memmove(dst + *o, L->lit + *li, k);
  *o += k;
  *li += k;
}

/* Sequences at p[0, n) executed on L's literals, output at dst[*o] (the
 * frame's output starts at fstart). */
static st sequences(const uint8_t *p, size_t n, uint8_t *dst, size_t cap, size_t fstart, size_t *o,
                    const literals *L, cg_zstd_work *z) {
  size_t li = 0, nseq, i = 1;
  if (n < 1) return CG_ZSTD_TRUNCATED;
  nseq = p[0];
  if (nseq == 0) {
    if (n != 1) return CG_ZSTD_BAD_SEQUENCES;
  } else if (nseq == 255) {
    if (n < 3) return CG_ZSTD_TRUNCATED;
    nseq = ((size_t)p[1] | (size_t)p[2] << 8) + 0x7F00;
    i = 3;
  } else if (nseq >= 128) {
    if (n < 2) return CG_ZSTD_TRUNCATED;
    nseq = ((nseq - 128) << 8) + p[1];
    i = 2;
  }
  if (nseq) {
    if (n - i < 1) return CG_ZSTD_TRUNCATED;
    unsigned modes = p[i++];
    /* its 2 reserved bits are not checked: the reference decoder ignores them */
    size_t u;
    st r;
    if ((r = seq_table(modes >> 6, p + i, n - i, &u, LL_MAX, LL_LOG_MAX, ll_default, LL_MAX + 1, 6, z->ll,
                       &z->ll_log, &z->have_ll)))
      return r;
    i += u;
    if ((r = seq_table((modes >> 4) & 3, p + i, n - i, &u, OF_MAX, OF_LOG_MAX, of_default, 29, 5, z->of,
                       &z->of_log, &z->have_of)))
      return r;
    i += u;
    if ((r = seq_table((modes >> 2) & 3, p + i, n - i, &u, ML_MAX, ML_LOG_MAX, ml_default, ML_MAX + 1, 6, z->ml,
                       &z->ml_log, &z->have_ml)))
      return r;
    i += u;
    bwd b;
    if (!bwd_init(&b, p + i, n - i)) return CG_ZSTD_BAD_SEQUENCES;
    uint32_t ls = (uint32_t)bwd_read(&b, z->ll_log), os = (uint32_t)bwd_read(&b, z->of_log),
             ms = (uint32_t)bwd_read(&b, z->ml_log);
    for (size_t k = 0; k < nseq; k++) {
      if (b.pos < 0) return CG_ZSTD_SEQUENCES_END;
      unsigned llc = z->ll[ls].sym, mlc = z->ml[ms].sym, ofc = z->of[os].sym;
      uint64_t ofv = (UINT64_C(1) << ofc) + bwd_read(&b, ofc);
      size_t ml = ml_base[mlc] + (size_t)bwd_read(&b, ml_bits[mlc]);
      size_t ll = ll_base[llc] + (size_t)bwd_read(&b, ll_bits[llc]);
      /* repeat offsets (3.1.1.5): 1..3 pick from history, shifted by one
       * when there are no literals; the one picked moves to the front */
      uint64_t off;
      if (ofv > 3) {
        off = ofv - 3;
        z->rep[2] = z->rep[1];
        z->rep[1] = z->rep[0];
        z->rep[0] = off;
      } else {
        unsigned idx = (unsigned)ofv - 1 + (ll == 0);
        if (idx == 0) {
          off = z->rep[0];
        } else {
          off = idx == 3 ? z->rep[0] - 1 : z->rep[idx];
          if (idx != 1) z->rep[2] = z->rep[1];
          z->rep[1] = z->rep[0];
          z->rep[0] = off;
        }
      }
      if (ll > L->n - li) return CG_ZSTD_BAD_SEQUENCES;
      if (!L->staged && ll > cap - *o) return CG_ZSTD_TOO_BIG;
      put_literals(dst, o, L, &li, ll);
      size_t lim = L->staged ? (size_t)(L->lit - dst) + li : cap; /* the next unread literal */
      if (ml > lim - *o) return CG_ZSTD_TOO_BIG;
      if (off == 0 || off > *o - fstart) return CG_ZSTD_BAD_OFFSET;
      uint8_t *d = dst + *o;
      const uint8_t *from = d - off;
      if (off >= ml) {
        memcpy(d, from, ml);
      } else if (off == 1) {
        memset(d, from[0], ml);
      } else {
        /* overlapping: the bytes repeat with period off, and with any
         * multiple of it; each chunk copied from a whole number of periods
         * back, no more than that many bytes (so no overlap), the span
         * doubling (span <= written + off holds) */
        size_t m = 0, span = off;
        while (m < ml) {
          size_t c = ml - m < span ? ml - m : span;
          memcpy(d + m, d + m - span, c);
          m += c;
          span *= 2;
        }
      }
      *o += ml;
      if (k + 1 < nseq) {
        ls = z->ll[ls].base + (uint32_t)bwd_read(&b, z->ll[ls].bits);
        ms = z->ml[ms].base + (uint32_t)bwd_read(&b, z->ml[ms].bits);
        os = z->of[os].base + (uint32_t)bwd_read(&b, z->of[os].bits);
      }
    }
    /* (the reference decoder also takes a stream read past its start) */
    if (b.pos != 0) return CG_ZSTD_SEQUENCES_END;
  }
  size_t rest = L->n - li;
  if (!L->staged && rest > cap - *o) return CG_ZSTD_TOO_BIG;
  put_literals(dst, o, L, &li, rest);
  return CG_ZSTD_OK;
}

/* ---- frames and blocks (3.1) ---- */

static st compressed_block(const uint8_t *p, size_t n, uint8_t *dst, size_t cap, size_t fstart, size_t *o,
                           cg_zstd_work *z) {
  literals L;
  size_t used;
  st r = read_literals(p, n, dst, cap, *o, z, &L, &used);
  if (r) return r;
  return sequences(p + used, n - used, dst, cap, fstart, o, &L, z);
}

/* One frame at src[*at, n): skipped when skippable, else decoded to dst[*o]. */
static st frame(const uint8_t *src, size_t n, size_t *at, uint8_t *dst, size_t cap, size_t *o, cg_zstd_work *z) {
  const uint8_t *p = src + *at;
  size_t left = n - *at, i;
  if (left < 4) return CG_ZSTD_TRUNCATED;
  uint32_t magic = le32(p);
  if ((magic & SKIPPABLE_MASK) == SKIPPABLE_MAGIC) {
    if (left < 8) return CG_ZSTD_TRUNCATED;
    uint32_t size = le32(p + 4);
    if (size > left - 8) return CG_ZSTD_TRUNCATED;
    *at += 8 + (size_t)size;
    return CG_ZSTD_OK;
  }
  if (magic != ZSTD_MAGIC) return CG_ZSTD_BAD_MAGIC;
  if (left < 5) return CG_ZSTD_TRUNCATED;
  unsigned fhd = p[4], fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, has_sum = (fhd >> 2) & 1;
  if (fhd & 8) return CG_ZSTD_BAD_HEADER;
  static const unsigned did_bytes[4] = {0, 1, 2, 4}, fcs_bytes[4] = {0, 2, 4, 8};
  size_t dn = did_bytes[fhd & 3], fn = fcs_flag == 0 && single ? 1 : fcs_bytes[fcs_flag];
  i = 5 + !single;
  if (left < i + dn + fn) return CG_ZSTD_TRUNCATED;
  if (dn && le64_upto(p + i, dn) != 0) return CG_ZSTD_DICTIONARY;
  i += dn;
  bool has_fcs = fn != 0;
  uint64_t fcs = le64_upto(p + i, fn) + (fn == 2 ? 256 : 0);
  i += fn;
  if (has_fcs && fcs > cap - *o) return CG_ZSTD_TOO_BIG;

  memset(z->rep, 0, sizeof z->rep);
  z->rep[0] = 1;
  z->rep[1] = 4;
  z->rep[2] = 8;
  z->have_huf = z->have_ll = z->have_ml = z->have_of = 0;
  size_t fstart = *o;
  for (;;) {
    if (left - i < 3) return CG_ZSTD_TRUNCATED;
    uint32_t bh = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16;
    unsigned last = bh & 1, type = (bh >> 1) & 3;
    size_t size = bh >> 3;
    i += 3;
    st r = CG_ZSTD_OK;
    if (type == 3) return CG_ZSTD_BAD_BLOCK;
    if (type == 1) { /* RLE: one byte, size times */
      if (left - i < 1) return CG_ZSTD_TRUNCATED;
      if (size > cap - *o) return CG_ZSTD_TOO_BIG;
      memset(dst + *o, p[i], size);
      *o += size;
      i += 1;
    } else {
      if (size > BLOCK_MAX) return CG_ZSTD_BAD_BLOCK;
      if (size > left - i) return CG_ZSTD_TRUNCATED;
      if (type == 0) {
        if (size > cap - *o) return CG_ZSTD_TOO_BIG;
        memcpy(dst + *o, p + i, size);
        *o += size;
      } else if ((r = compressed_block(p + i, size, dst, cap, fstart, o, z))) {
        return r;
      }
      i += size;
    }
    if (last) break;
  }
  if (has_fcs && *o - fstart != fcs) return CG_ZSTD_SIZE_MISMATCH;
  if (has_sum) {
    if (left - i < 4) return CG_ZSTD_TRUNCATED;
    if ((uint32_t)XXH64(dst + fstart, *o - fstart, 0) != le32(p + i)) return CG_ZSTD_CHECKSUM;
    i += 4;
  }
  *at += i;
  return CG_ZSTD_OK;
}

cg_zstd_status cg_zstd_decode(const void *src, size_t n, void *dst, size_t cap, size_t *len, cg_zstd_work *w) {
  size_t at = 0, o = 0;
  static uint8_t none;
  *len = 0;
  if (!dst) { /* no room at all: (NULL + 0 is not a pointer C allows) */
    dst = &none;
    cap = 0;
  }
  while (at < n) {
    st r = frame((const uint8_t *)src, n, &at, (uint8_t *)dst, cap, &o, w);
    if (r) return r;
  }
  *len = o;
  return CG_ZSTD_OK;
}

const char *cg_zstd_status_text(cg_zstd_status s) {
  switch (s) {
  case CG_ZSTD_OK: return "zstd: decoded";
  case CG_ZSTD_TRUNCATED: return "zstd: the input ends inside a frame";
  case CG_ZSTD_BAD_MAGIC: return "zstd: not a zstd frame (bad magic number)";
  case CG_ZSTD_BAD_HEADER: return "zstd: reserved bit set in the frame header";
  case CG_ZSTD_DICTIONARY: return "zstd: the frame needs a dictionary";
  case CG_ZSTD_TOO_BIG: return "zstd: the output does not fit in the buffer";
  case CG_ZSTD_BAD_BLOCK: return "zstd: reserved block type or block over 128 KiB";
  case CG_ZSTD_BAD_LITERALS: return "zstd: malformed literals section";
  case CG_ZSTD_BAD_HUFFMAN: return "zstd: malformed Huffman tree or stream";
  case CG_ZSTD_BAD_FSE: return "zstd: malformed FSE table description";
  case CG_ZSTD_BAD_SEQUENCES: return "zstd: malformed sequences section";
  case CG_ZSTD_BAD_OFFSET: return "zstd: a match reaches before the start of the output";
  case CG_ZSTD_NO_TABLE: return "zstd: a repeat mode with no earlier table";
  case CG_ZSTD_SIZE_MISMATCH: return "zstd: the output's size differs from the frame's content size";
  case CG_ZSTD_CHECKSUM: return "zstd: content checksum mismatch";
  case CG_ZSTD_HUFFMAN_END: return "zstd: a Huffman stream lacks its end marker or does not end after its last symbol";
  case CG_ZSTD_SEQUENCES_END: return "zstd: the sequences' bit stream does not end after the last sequence";
  }
  return "zstd: unknown status";
}
