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

void cg_out_char(cg_out *o, char c) { cg_out_mem(o, &c, 1); }

/* Digits by hand: snprintf may allocate (locale), and the shim must not. */
void cg_out_u64(cg_out *o, uint64_t v) {
  char tmp[20];
  size_t i = sizeof tmp;
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
