/* The log reader's memory: strings and kernel lists interned once (a log
 * repeats the same call names, kernel names and call sites on millions of
 * lines), and the hash indices that find a line's process and capture in
 * constant time. Text is made safe as it is interned: control characters
 * (escape sequences, newlines, NUL) become '?', so nothing read from a log
 * can drive a terminal. */
#ifndef CAPGUARD_LOG_POOL_H
#define CAPGUARD_LOG_POOL_H

#include <jansson.h>
#include <stddef.h>

/* An interned list of strings (an event's kernel names); shared by every event
 * that loaded the same kernels. */
typedef struct {
  const char **v;
  size_t n;
} cgl_strs;

struct cgl_pool *cgl_pool_new(void);
void cgl_pool_free(struct cgl_pool *p);
/* s[0..n) made safe in place: each control character (escape sequences,
 * newlines, NUL) and each byte that is not part of valid UTF-8 (a character
 * a buffer cut in two) becomes '?', so that the text can neither drive a
 * terminal nor make a JSON string (jansson) refuse it. */
void cgl_make_printable(char *s, size_t n);
/* The interned copy of s[0..n) (made printable); NULL when s is NULL. */
const char *cgl_intern(struct cgl_pool *p, const char *s, size_t n);
/* The interned copy of s[0..n) byte for byte (a command to paste must give
 * back the very words); never shown as it is. */
const char *cgl_intern_exact(struct cgl_pool *p, const char *s, size_t n);
/* Drops the table that finds interned strings (a pointer a string, the
 * peak's largest part after the records once the log is read), keeping
 * the strings: the next cgl_intern makes it again from them. */
void cgl_pool_seal(struct cgl_pool *p);
/* The interned list of n strings, each already interned. */
const cgl_strs *cgl_intern_list(struct cgl_pool *p, const char *const *v, size_t n);

/* The (a, b) key of table t's value: the index keeps values only, the key
 * is the item's (its process's file and pid, its capture's process and id). */
typedef void (*cgl_index_key)(const void *ctx, int t, size_t value, long long *a, long long *b);
struct cgl_index *cgl_index_new(void);
void cgl_index_free(struct cgl_index *x);
/* Empties x (its tables freed), as new. */
void cgl_index_clear(struct cgl_index *x);
/* The value stored for a (a, b) key of table t (0 to 3: 0 processes by
 * (file, pid), 1 captures by (process, id)), or -1 when none; key_of(ctx,
 * ...) gives the keys of the values stored. */
long cgl_index_get(struct cgl_index *x, int t, long long a, long long b, cgl_index_key key_of,
                   const void *ctx);
/* value, under key (a, b) of table t (replacing what that key held). */
void cgl_index_put(struct cgl_index *x, int t, long long a, long long b, size_t value, cgl_index_key key_of,
                   const void *ctx);

/* Allocation that ends the program with one line instead of crashing: a log
 * too large for memory is a usage problem. */
void *cgl_xrealloc(void *p, size_t n);

/* Text as a JSON string, never refused: a buffer that cut a character in
 * the middle, or a file name from the command line, need not be UTF-8; such
 * bytes become '?' (the log's own strings already are, cgl_intern). NULL
 * is "". NULL only when out of memory. */
json_t *cgl_json_text(const char *s);

#endif
