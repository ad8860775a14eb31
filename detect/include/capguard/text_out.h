/* An append-only writer over a caller's buffer that never overflows, with
 * snprintf's contract: it counts every byte asked for (len), stores the first
 * cap - 1 of them, and cg_out_finish NUL-terminates (when cap > 0) and returns
 * the count, so a caller sees truncation and can retry with a bigger buffer.
 * No allocation, no stdio, no locks: safe in the shim, in a signal-free
 * corner of someone else's driver call. The one bounded writer of capguard
 * (events, the log's records, native frames, "where" lines). */
#ifndef CAPGUARD_TEXT_OUT_H
#define CAPGUARD_TEXT_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *buf;
  size_t cap;
  size_t len; /* bytes asked for so far; only the first cap - 1 are stored */
} cg_out;

cg_out cg_out_init(char *buf, size_t cap); /* buf NULL: count only */
void cg_out_mem(cg_out *o, const char *s, size_t n);
void cg_out_str(cg_out *o, const char *s); /* NULL writes nothing */
void cg_out_char(cg_out *o, char c);
void cg_out_u64(cg_out *o, uint64_t v);   /* decimal */
void cg_out_int(cg_out *o, long long v);  /* decimal, with '-' */
void cg_out_hex(cg_out *o, uint64_t v);   /* "0x1a2b" */
/* Everything asked for so far is stored, with room left for a NUL at buf[len]. */
bool cg_out_fits(const cg_out *o);
/* Bytes stored (at most cap - 1). */
size_t cg_out_stored(const cg_out *o);
/* NUL-terminate what is stored; returns len, what the whole text needs. */
size_t cg_out_finish(cg_out *o);

/* Bytes of the valid UTF-8 sequence at p (1-4), or 0 if p starts an invalid
 * one or one longer than the rem bytes left (Unicode's well-formed
 * sequences: no overlongs, no surrogates, nothing above U+10FFFF). */
size_t cg_utf8_len(const unsigned char *p, size_t rem);

#endif
