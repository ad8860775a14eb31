#include "capguard/text_out.h"

#include <string.h>

cg_out cg_out_init(char *buf, size_t cap) {
  cg_out o = {buf, buf ? cap : 0, 0};
  return o;
}

void cg_out_mem(cg_out *o, const char *s, size_t n) {
  if (o->cap > 0 && o->len < o->cap - 1) {
    size_t room = o->cap - 1 - o->len;
    memcpy(o->buf + o->len, s, n < room ? n : room);
  }
  o->len += n;
}

void cg_out_str(cg_out *o, const char *s) {
  if (s)
    cg_out_mem(o, s, strlen(s));
}

void cg_out_char(cg_out *o, char c) {
  if (o->cap > 0 && o->len < o->cap - 1)
    o->buf[o->len] = c;
  o->len++;
}

/* Digits by hand: snprintf may allocate (locale), and the shim must not. */
void cg_out_u64(cg_out *o, uint64_t v) {
  /* Two digits a division: a log's clock readings have 19. */
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
  char tmp[20];
  size_t i = sizeof tmp;
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100);
    v /= 100;
    tmp[--i] = pairs[2 * d + 1];
    tmp[--i] = pairs[2 * d];
  }
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  cg_out_mem(o, tmp + i, sizeof tmp - i);
}

void cg_out_int(cg_out *o, long long v) {
  if (v < 0) {
    cg_out_char(o, '-');
    cg_out_u64(o, (uint64_t)0 - (uint64_t)v); /* LLONG_MIN too, without overflow */
    return;
  }
  cg_out_u64(o, (uint64_t)v);
}

void cg_out_hex(cg_out *o, uint64_t v) {
  char tmp[18];
  size_t i = sizeof tmp;
  do {
    tmp[--i] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v);
  tmp[--i] = 'x';
  tmp[--i] = '0';
  cg_out_mem(o, tmp + i, sizeof tmp - i);
}

bool cg_out_fits(const cg_out *o) { return o->len < o->cap; }

size_t cg_out_stored(const cg_out *o) {
  if (o->cap == 0)
    return 0;
  return o->len < o->cap - 1 ? o->len : o->cap - 1;
}

size_t cg_out_finish(cg_out *o) {
  if (o->cap > 0)
    o->buf[cg_out_stored(o)] = '\0';
  return o->len;
}

/* Bytes of the valid UTF-8 sequence at p (1-4), or 0 if p starts an invalid
 * one or one longer than the rem bytes left. The ranges are Unicode's
 * well-formed sequences: no overlongs, no surrogates, nothing above U+10FFFF. */
size_t cg_utf8_len(const unsigned char *p, size_t rem) {
  unsigned c = p[0];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return rem >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    if (rem < 3 || p[1] < lo || p[1] > hi) return 0;
    return (p[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (rem < 4 || p[1] < lo || p[1] > hi) return 0;
    if ((p[2] & 0xC0) != 0x80) return 0;
    return (p[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}
