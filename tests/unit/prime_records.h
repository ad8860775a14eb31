/* Test records for the priming-file suites: deterministic image bytes of an
 * exact size, and a record describing them. */
#ifndef CAPGUARD_TEST_PRIME_RECORDS_H
#define CAPGUARD_TEST_PRIME_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "capguard/prime_file.h"

uint8_t *image_bytes(uint32_t seed, size_t size);
cg_hash128 hash_of(const void *p, size_t n);
/* A record for image `seed` of `size` bytes; free its bytes with free_record. */
cg_prime_record make_record(uint32_t seed, size_t size);
void free_record(cg_prime_record *r);
/* The record of exactly these bytes, or NULL: cg_prime_find_hashed with
 * their hash, as the shim asks after inspecting an image. */
const cg_prime_record *prime_find(const cg_prime_set *s, const void *bytes, size_t size);

/* Warnings a priming-file call gave, checked as they come: each is one line
 * that names the file. */
typedef struct {
  int n;
  char last[1024];
} warnings;
void collect_warning(void *ctx, const char *line);

/* A fresh directory /tmp/TAG.XXXXXX in dir (cap bytes), and its removal with
 * everything in it. */
void make_test_dir(char *dir, size_t cap, const char *tag);
void remove_test_dir(const char *dir);

#endif
